/**
 * The one place a request is sent, and the one retry loop. Every rule lives here:
 *
 * - `429 rate_limited` is retried after Retry-After (bounded, and within the call's time) for every
 *   request: the service did no work.
 * - A GET is also retried on 502/503/504, on a broken connection and on an answer it cannot read.
 * - A POST (a paid generation) is otherwise retried only when the connection was refused, that is
 *   when nothing left this machine: a generation is never sent twice when it may have run.
 * - No redirect is followed here (n8n would re-attach `Authorization` on another host); a redirect
 *   from an API route is an error naming its target. Downloads follow the file endpoint's by hand.
 *
 * And what a failure cost (`charge`) is decided here, once, from how far the request got.
 */
import type { IDataObject, IHttpRequestOptions, IN8nHttpFullResponse } from 'n8n-workflow';

import {
	type ApiErrorInfo,
	type ChargeOutcome,
	englishMessage,
	errorDescription,
	imagePackError,
	parseErrorBody,
	redact,
	redactDeep,
	retryAfterSeconds,
} from '../shared/errors';
import { isPollTeardown, pollTeardownError } from '../shared/polling';
import { BodyTooLarge, discard, readCapped } from './body';
import { type ApiContext, type Connection, CREDENTIAL_TYPE } from './connection';
import { backoff, limits, retryPolicy } from './limits';
import type { Route } from './routes';
import { type CallScope, pause, remainingMs } from './scope';

export interface Outgoing {
	route: Route;
	url: string;
	/** The path named in messages ("signed download link" off the API's origin). */
	path: string;
	qs?: IDataObject;
	body?: IDataObject;
	headers?: IDataObject;
	itemIndex?: number;
	/** With the credential (the API's origin) or without (signed links on the file host). */
	authenticated: boolean;
	/** Hand 3xx answers to the receiver (the file endpoint); otherwise a redirect is an error. */
	acceptRedirects?: boolean;
	/** For a paid route: the session to check when the generation may have run. */
	sessionId?: string;
}

/** A 2xx answer whose body could not be read: cut off, garbled, too large, not a JSON object. */
export interface BrokenAnswer {
	code: string;
	problem: string;
	/** The first characters of the body, key masked. */
	snippet: string;
}

/** Reads an accepted answer: a value, or a broken answer (retried where that is safe). */
export type Receiver<R> = (
	response: IN8nHttpFullResponse,
	requestId: string | undefined,
) => Promise<{ value: R } | { broken: BrokenAnswer }>;

/** How far a failed request got, which decides what it cost. */
type Delivery = 'not_sent' | 'refused' | 'unknown';

function chargeOf(route: Route, delivery: Delivery): ChargeOutcome {
	if (delivery === 'not_sent') return 'not_sent';
	return route.paid && delivery === 'unknown' ? 'may_have_been_charged' : 'not_charged';
}

/** Errors after which the request certainly never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

const NETWORK_WORDS: Record<string, string> = {
	ECONNREFUSED: 'the connection was refused',
	ENOTFOUND: 'the host name does not resolve',
	EAI_AGAIN: 'the host name could not be resolved right now',
	ECONNRESET: 'the connection was reset before the answer arrived',
	EPIPE: 'the connection was closed while sending',
	// axios' word for a body cut off mid-stream
	ERR_BAD_RESPONSE: 'the answer was cut off before it was complete',
	ERR_BODY_TOO_LARGE: 'the answer was larger than allowed',
};

/**
 * The network error code (ECONNREFUSED, ECONNRESET, ...) of an error from n8n's helpers, if any. The
 * one place that reads an error's text: n8n's and the network's errors do not always carry a code.
 */
export function networkErrorCode(error: unknown): string | undefined {
	let current = error as { code?: unknown; cause?: unknown } | undefined;
	for (let depth = 0; current && depth < 4; depth++) {
		if (typeof current.code === 'string' && /^(E[A-Z_]+|ERR_[A-Z_]+)$/.test(current.code)) {
			return current.code;
		}
		current = current.cause as typeof current;
	}
	const message = String((error as Error | undefined)?.message ?? '');
	if (/timeout/i.test(message)) return 'ETIMEDOUT';
	if (/socket hang up/i.test(message)) return 'ECONNRESET';
	if (/aborted|premature close/i.test(message)) return 'ERR_BAD_RESPONSE';
	return undefined;
}

export function headerValue(
	headers: IN8nHttpFullResponse['headers'],
	name: string,
): string | undefined {
	const value = headers?.[name] ?? headers?.[name.toLowerCase()];
	if (Array.isArray(value)) return value[0] as string;
	return typeof value === 'string' ? value : undefined;
}

function isRedirect(status: number): boolean {
	return status >= 300 && status < 400;
}

/** Builds the errors of one outgoing request, with its facts. */
export class Failures {
	constructor(
		private readonly ctx: ApiContext,
		private readonly connection: Connection,
		private readonly out: Outgoing,
		private readonly scope: CallScope,
	) {}

	/** The request got no (complete) answer: refused, reset, timed out, stopped. */
	network(code?: string) {
		const { out, scope } = this;
		const cancelled = scope.cancel?.aborted === true;
		const timedOut =
			!cancelled && (scope.signal.aborted || code === 'ETIMEDOUT' || code === 'ECONNABORTED');
		const notSent = code !== undefined && NOT_SENT_CODES.has(code) && !cancelled && !timedOut;
		// The raw code stays out of the message: NodeApiError swaps messages that mention well-known
		// network codes for a generic one.
		const message = cancelled
			? 'The execution was stopped while waiting for the Image Pack API'
			: timedOut
				? `The Image Pack API did not answer within ${Math.round(scope.timeoutMs / 100) / 10} seconds (the timeout covers the whole call, the answer's body included)`
				: notSent
					? `The Image Pack API could not be reached (${NETWORK_WORDS[code]}): check the Base URL of the credential`
					: `The connection to the Image Pack API failed (${(code && NETWORK_WORDS[code]) ?? 'network error'})`;
		const reason = cancelled ? 'cancelled' : timedOut ? 'timeout' : (code ?? 'unknown');
		return this.build(
			{
				code: cancelled ? 'cancelled' : timedOut ? 'timeout' : 'network_error',
				httpStatus: 0,
				charge: chargeOf(out.route, notSent ? 'not_sent' : 'unknown'),
			},
			message,
			`${out.route.method} ${out.path} · network error: ${reason}`,
		);
	}

	/** The service (or something in front of it) answered with an error. */
	answer(info: ApiErrorInfo, delivery: Delivery, extra?: string, message?: string) {
		return this.build(
			{
				code: info.code,
				httpStatus: info.httpStatus,
				requestId: info.requestId,
				apiMessage: info.apiMessage,
				charge: chargeOf(this.out.route, delivery),
			},
			message ?? englishMessage(info, this.out.path),
			errorDescription(info, extra),
		);
	}

	private build(
		facts: Omit<Parameters<typeof imagePackError>[1], 'itemIndex' | 'sessionId'>,
		message: string,
		description: string,
	) {
		const { out } = this;
		return imagePackError(
			this.ctx.getNode(),
			{ ...facts, itemIndex: out.itemIndex, sessionId: out.route.paid ? out.sessionId : undefined },
			{ message, description, secret: this.connection.apiKey },
		);
	}
}

/** Sends one request through n8n's helpers, bounded by the call's scope, redirects never followed. */
async function exchange(
	ctx: ApiContext,
	{ credential }: Connection,
	out: Outgoing,
	scope: CallScope,
): Promise<IN8nHttpFullResponse> {
	const options: IHttpRequestOptions = {
		method: out.route.method,
		url: out.url,
		qs: out.qs,
		body: out.body,
		json: out.body !== undefined,
		headers: out.authenticated ? { Accept: 'application/json', ...out.headers } : out.headers,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: true,
		encoding: 'stream',
		// Also an idle guard for the connect and wait phases; the signal bounds the whole call.
		timeout: remainingMs(scope),
		abortSignal: scope.signal,
	};
	if (!out.authenticated) {
		// Deliberately the unauthenticated helper: a signed link must never receive the key.
		return (await ctx.helpers.httpRequest(options)) as IN8nHttpFullResponse;
	}
	// n8n's authenticated helper replaces `abortSignal` with the execution's cancel signal; a view of
	// the context whose cancel signal is this call's (Stop or deadline) keeps both in force.
	const scoped = Object.create(ctx, {
		getExecutionCancelSignal: { value: () => scope.signal },
	}) as ApiContext;
	return (await ctx.helpers.httpRequestWithAuthentication.call(scoped, CREDENTIAL_TYPE, options, {
		credentialsDecrypted: credential,
	})) as IN8nHttpFullResponse;
}

/**
 * Sends `out` with the retry rules above and hands the first accepted answer (below 300, or a
 * redirect with `acceptRedirects`) to `receive`. A broken answer is read again where that is safe;
 * otherwise `tolerate` (after a paid generation: keep what came back) or an error.
 */
export async function send<R>(
	ctx: ApiContext,
	connection: Connection,
	out: Outgoing,
	scope: CallScope,
	receive: Receiver<R>,
	tolerate?: (broken: BrokenAnswer, status: number, requestId?: string) => R,
): Promise<R> {
	const fail = new Failures(ctx, connection, out, scope);
	const idempotent = out.route.method === 'GET';
	const wait = async (ms: number) =>
		await pause(ms, scope).catch(() => {
			throw fail.network();
		});
	for (let attempt = 1; ; attempt++) {
		if (scope.signal.aborted) throw fail.network();
		let response: IN8nHttpFullResponse;
		try {
			response = await exchange(ctx, connection, out, scope);
		} catch (error) {
			// n8n took the poll's expression engine away: not the network; the caller decides.
			if (isPollTeardown(error)) throw pollTeardownError(ctx.getNode(), error);
			const code = networkErrorCode(error);
			const repeatable = idempotent || (code !== undefined && NOT_SENT_CODES.has(code));
			if (!scope.signal.aborted && repeatable && attempt <= retryPolicy.transientRetries) {
				await pause(backoff(attempt), scope).catch(() => undefined);
				continue;
			}
			throw fail.network(code);
		}

		const status = response.statusCode;
		const requestId = responseRequestId(response, connection);
		if (status < 300 || (isRedirect(status) && out.acceptRedirects)) {
			const received = await receive(response, requestId);
			if ('value' in received) return received.value;
			if (scope.signal.aborted) throw fail.network();
			if (idempotent && attempt <= retryPolicy.transientRetries) {
				await wait(backoff(attempt));
				continue;
			}
			if (tolerate && status < 300) return tolerate(received.broken, status, requestId);
			const { code, problem, snippet } = received.broken;
			const info = {
				code,
				httpStatus: status,
				requestId,
				apiMessage: `${problem}${snippet ? `: ${snippet}` : ''}`,
			};
			throw fail.answer(info, 'unknown');
		}
		if (isRedirect(status)) {
			discard(response.body);
			throw redirectError(
				fail,
				out,
				status,
				headerValue(response.headers, 'location'),
				requestId,
				connection,
			);
		}

		let text = '';
		try {
			text = (await readCapped(response.body, limits.maxErrorBodyBytes, scope, true)).toString(
				'utf8',
			);
		} catch {
			if (scope.signal.aborted) throw fail.network();
		}
		const info = parseErrorBody(status, redact(text, connection.apiKey), requestId);
		if (status === 429 && info.code === 'rate_limited') {
			const seconds =
				retryAfterSeconds(headerValue(response.headers, 'retry-after')) ?? backoff(attempt) / 1000;
			const inTime = seconds * 1000 < scope.deadline - Date.now();
			if (
				attempt <= retryPolicy.rateLimitRetries &&
				seconds <= retryPolicy.maxRetryAfterSeconds &&
				inTime
			) {
				await wait(seconds * 1000);
				continue;
			}
			const extra = `gave up after ${attempt} attempts; the service asked to wait ${seconds} seconds`;
			throw fail.answer(info, 'refused', extra);
		}
		if (TRANSIENT_STATUSES.has(status) && idempotent && attempt <= retryPolicy.transientRetries) {
			await wait(backoff(attempt));
			continue;
		}
		if (!out.authenticated && (status === 403 || status === 410)) info.code = 'expired_link';
		// A gateway error on a POST says nothing about whether the work behind it ran; the service's
		// own internal_error promises a refund.
		const gateway = status >= 500 && info.code !== 'internal_error';
		throw fail.answer(info, gateway ? 'unknown' : 'refused');
	}
}

function responseRequestId(response: IN8nHttpFullResponse, { apiKey }: Connection) {
	const value = headerValue(response.headers, 'x-request-id');
	return value === undefined ? undefined : redact(value, apiKey);
}

/** A redirect the node will not follow (the key stays home), naming where it pointed. */
function redirectError(
	fail: Failures,
	out: Outgoing,
	status: number,
	location: string | undefined,
	requestId: string | undefined,
	{ apiKey }: Connection,
) {
	const target = location ? redact(location, apiKey).slice(0, 300) : '(no Location header)';
	return fail.answer(
		{ code: 'unexpected_redirect', httpStatus: status, requestId },
		'unknown',
		`redirect target: ${target} · not followed, so the API key was not sent there`,
		`The Image Pack API answered ${out.route.method} ${out.path} with a redirect (HTTP ${status}) to ${target}, which the node does not follow: check the Base URL of the credential`,
	);
}

/** Reads a JSON object answer (capped); anything else is a broken answer. */
export function jsonReceiver<T>(connection: Connection, scope: CallScope): Receiver<Answer<T>> {
	return async (response, requestId) => {
		let snippet = '';
		try {
			const text = (await readCapped(response.body, limits.maxJsonBytes, scope)).toString('utf8');
			snippet = redact(text, connection.apiKey).slice(0, 200);
			const parsed: unknown = JSON.parse(text);
			if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
				const body = redactDeep(parsed, connection.apiKey) as T;
				return { value: { body, status: response.statusCode, requestId } };
			}
			return {
				broken: {
					code: 'non_json_response',
					problem: 'the answer is JSON but not an object',
					snippet,
				},
			};
		} catch (error) {
			if (error instanceof BodyTooLarge) {
				const problem = `the answer is ${error.message}, more than an API answer can be`;
				return { broken: { code: 'answer_too_large', problem, snippet } };
			}
			if (error instanceof SyntaxError) {
				const problem = snippet ? 'the answer is not JSON' : 'the answer was empty';
				return { broken: { code: 'non_json_response', problem, snippet } };
			}
			const problem = 'the connection broke before the answer was complete';
			return { broken: { code: 'answer_cut_off', problem, snippet } };
		}
	};
}

export interface Answer<T> {
	body: T;
	status: number;
	/** The `X-Request-Id` response header, quoted when reporting a problem. */
	requestId?: string;
	/** Why a 2xx body of a paid call could not be read; `body` is then `{}`. */
	unreadable?: string;
}
