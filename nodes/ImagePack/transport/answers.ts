/**
 * What came back, and what a failure cost. Reading: an accepted answer (JSON objects with a cap,
 * anything else a broken answer), an error body, the key masked in all of it.
 * Failing: what a failed request cost is decided once from how far it got, and the error says so.
 */
import type { IN8nHttpFullResponse } from 'n8n-workflow';

import { type Code, type ErrorCode, codeOf, englishMessage } from '../shared/codes';
import {
	type ChargeOutcome,
	type ErrorFacts,
	errorDescription,
	imagePackError,
	redact,
} from '../shared/errors';
import { BodyTooLarge, readCapped } from './body';
import { type ApiContext, type CallScope, type Outgoing, type Route, routeOf } from './connection';
import { type Connection } from './credential';
import { limits } from './limits';

/** A 2xx answer whose body could not be read: cut off, garbled, too large, not a JSON object. */
export interface BrokenAnswer {
	code: Code;
	problem: string;
	/** The first characters of the body, key masked. */
	snippet: string;
}

/** Reads an accepted answer: a value, or a broken answer (retried where that is safe). */
export type Receiver<R> = (
	response: IN8nHttpFullResponse,
	requestId: string | undefined,
) => Promise<{ value: R } | { broken: BrokenAnswer }>;

export function headerValue(
	headers: IN8nHttpFullResponse['headers'],
	name: string,
): string | undefined {
	const value = headers?.[name] ?? headers?.[name.toLowerCase()];
	if (Array.isArray(value)) return value[0] as string;
	return typeof value === 'string' ? value : undefined;
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
			const problem = 'the answer is JSON but not an object';
			return { broken: { code: 'non_json_response', problem, snippet } };
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

/**
 * Reads an error body. The API promises `{error:{code,message,request_id}}`; proxies in front of it
 * may answer with HTML or nothing, which still has to become a clear error.
 */
export function parseErrorBody(
	httpStatus: number,
	text: string,
	requestIdHeader?: string,
): ApiAnswer {
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		parsed = undefined;
	}
	const error = (parsed as { error?: Record<string, unknown> } | undefined)?.error;
	if (error && typeof error.code === 'string') {
		return {
			code: codeOf(error.code),
			httpStatus,
			requestId: typeof error.request_id === 'string' ? error.request_id : requestIdHeader,
			apiMessage: typeof error.message === 'string' ? error.message : undefined,
		};
	}
	const snippet = text
		.replace(/<[^>]*>/g, ' ')
		.replace(/\s+/g, ' ')
		.trim()
		.slice(0, 200);
	return {
		code: parsed === undefined ? 'non_json_response' : 'unknown_error',
		httpStatus,
		requestId: requestIdHeader,
		apiMessage: snippet || undefined,
	};
}

/**
 * `redact` (shared/errors.ts) applied to every string (keys included) of a JSON-like value, without recursion, so a
 * hostile answer nested 100,000 levels deep cannot overflow the stack. Returns a copy.
 */
function redactDeep<T>(value: T, secret: string | undefined): T {
	if (!secret || secret.length < 4) return value;
	const clean = (text: string) => (text.includes(secret) ? redact(text, secret) : text);
	if (typeof value === 'string') return clean(value) as T;
	if (typeof value !== 'object' || value === null) return value;
	const root: unknown = Array.isArray(value) ? [] : {};
	const stack: Array<[unknown, Record<string, unknown>]> = [
		[value, root as Record<string, unknown>],
	];
	while (stack.length) {
		const [source, target] = stack.pop()!;
		for (const [key, child] of Object.entries(source as Record<string, unknown>)) {
			let copy: unknown = child;
			if (typeof child === 'string') copy = clean(child);
			else if (typeof child === 'object' && child !== null) {
				copy = Array.isArray(child) ? [] : {};
				stack.push([child, copy as Record<string, unknown>]);
			}
			// defineProperty: a "__proto__" key from JSON stays a plain key, not a prototype.
			Object.defineProperty(target, clean(key), {
				value: copy,
				enumerable: true,
				writable: true,
				configurable: true,
			});
		}
	}
	return root as T;
}

// Failures.

/** What an error answer says: its code, status, request id and the API's own message. */
export type ApiAnswer = Pick<ErrorFacts, 'requestId' | 'apiMessage'> & {
	code: ErrorCode;
	httpStatus: number;
};

/** How far a failed request got, which decides what it cost. */
export type Delivery = 'not_sent' | 'refused' | 'unknown';

function chargeOf(route: Route, delivery: Delivery): ChargeOutcome {
	if (delivery === 'not_sent') return 'not_sent';
	return route.paid && delivery === 'unknown' ? 'may_have_been_charged' : 'not_charged';
}

/** Why a request got no answer, by network error code (in the message of a `network_error`). */
const NETWORK_CAUSES: Record<string, string> = {
	ECONNREFUSED: 'the connection was refused',
	ENOTFOUND: 'the host name does not resolve',
	EAI_AGAIN: 'the host name could not be resolved right now',
	ECONNRESET: 'the connection was reset before the answer arrived',
	EPIPE: 'the connection was closed while sending',
	// axios' word for a body cut off mid-stream
	ERR_BAD_RESPONSE: 'the answer was cut off before it was complete',
	ERR_BODY_TOO_LARGE: 'the answer was larger than allowed',
};

/** Errors after which the request certainly never reached the server. */
export const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

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

/** Builds the errors of one outgoing request, with its facts. */
export class Failures {
	constructor(
		private readonly ctx: ApiContext,
		private readonly connection: Connection,
		private readonly out: Outgoing,
		private readonly scope: CallScope,
	) {}

	/**
	 * The request got no (complete) answer: refused, reset, timed out, stopped. `unsent`: it was
	 * stopped or timed out before this attempt left (earlier attempts were refused, never charged).
	 */
	network(code?: string, unsent = false) {
		const { out, scope } = this;
		const cancelled = scope.cancel?.aborted === true;
		const timedOut =
			!cancelled && (scope.signal.aborted || code === 'ETIMEDOUT' || code === 'ECONNABORTED');
		const notSent =
			unsent || (code !== undefined && NOT_SENT_CODES.has(code) && !cancelled && !timedOut);
		// The raw code stays out of the message: NodeApiError swaps messages that mention well-known
		// network codes for a generic one.
		const message = cancelled
			? unsent
				? 'The execution was stopped before the request was sent: nothing was sent'
				: 'The execution was stopped while waiting for the Image Pack API'
			: timedOut
				? `The Image Pack API did not answer within ${Math.round(scope.timeoutMs / 100) / 10} seconds (the timeout covers the whole call, the answer's body included)`
				: notSent && code !== undefined
					? `The Image Pack API could not be reached (${NETWORK_CAUSES[code]}): check the Base URL of the credential`
					: `The connection to the Image Pack API failed (${(code && NETWORK_CAUSES[code]) ?? 'network error'})`;
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
	answer(info: ApiAnswer, delivery: Delivery, extra?: string, message?: string) {
		return this.build(
			{
				code: info.code,
				httpStatus: info.httpStatus,
				requestId: info.requestId,
				apiMessage: info.apiMessage,
				charge: chargeOf(this.out.route, delivery),
			},
			message ?? englishMessage(info, routeOf(this.out.path)),
			errorDescription(info, extra),
		);
	}

	/** The file endpoint answered, but not with a redirect the node can use: `problem` says why. */
	fileAnswer(response: IN8nHttpFullResponse, code: Code, problem: string, message?: string) {
		const requestId = headerValue(response.headers, 'x-request-id');
		const info = { code, httpStatus: response.statusCode, requestId, apiMessage: problem };
		return this.answer(info, 'refused', undefined, message);
	}

	/** A redirect the node will not follow (the key stays home), naming where it pointed. */
	redirect(status: number, location: string | undefined, requestId: string | undefined) {
		const { out } = this;
		const target = location
			? redact(location, this.connection.apiKey).slice(0, 300)
			: '(no Location header)';
		return this.answer(
			{ code: 'unexpected_redirect', httpStatus: status, requestId },
			'unknown',
			`redirect target: ${target} · not followed, so the API key was not sent there`,
			`The Image Pack API answered ${out.route.method} ${out.path} with a redirect (HTTP ${status}) to ${target}, which the node does not follow: check the Base URL of the credential`,
		);
	}

	private build(
		facts: Omit<ErrorFacts, 'itemIndex' | 'sessionId'> & { code: ErrorCode },
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
