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
import type { IHttpRequestOptions, IN8nHttpFullResponse } from 'n8n-workflow';

import { rule } from '../shared/codes';
import { redact } from '../shared/errors';
import {
	type BrokenAnswer,
	Failures,
	NOT_SENT_CODES,
	type Receiver,
	headerValue,
	networkErrorCode,
	parseErrorBody,
} from './answers';
import { discard, readCapped } from './body';
import { type ApiContext, type CallScope, type Outgoing, pause, remainingMs } from './connection';
import { type Connection, CREDENTIAL_TYPE } from './credential';
import { backoff, limits, retryPolicy } from './limits';

/** Seconds to wait from a Retry-After header (delta seconds or an HTTP date); undefined if absent. */
export function retryAfterSeconds(header: unknown, now = Date.now()): number | undefined {
	if (typeof header !== 'string' && typeof header !== 'number') return undefined;
	const value = String(header).trim();
	if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
	// Date.parse reads almost anything ("-5", "foo 1"): only take what looks like an HTTP date
	// (a month or day name and a hh:mm:ss time), so garbage falls back to the caller's backoff.
	if (!/[a-z]{3}/i.test(value) || !/\d{1,2}:\d{2}:\d{2}/.test(value)) return undefined;
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

const TRANSIENT_STATUSES = new Set([502, 503, 504]);

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

/** What one attempt came to: the value, or a wait before the next attempt. */
type Step<R> = { value: R } | { retryInMs: number };

interface Attempt<R> {
	ctx: ApiContext;
	connection: Connection;
	out: Outgoing;
	scope: CallScope;
	fail: Failures;
	receive: Receiver<R>;
	tolerate?: (broken: BrokenAnswer, status: number, requestId?: string) => R;
	/** 1 for the first attempt. */
	number: number;
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
	tolerate?: Attempt<R>['tolerate'],
): Promise<R> {
	const fail = new Failures(ctx, connection, out, scope);
	for (let number = 1; ; number++) {
		if (scope.signal.aborted) throw fail.network(undefined, true);
		const step = await attempt({ ctx, connection, out, scope, fail, receive, tolerate, number });
		if ('value' in step) return step.value;
		await pause(step.retryInMs, scope).catch(() => {
			throw fail.network();
		});
	}
}

async function attempt<R>(run: Attempt<R>): Promise<Step<R>> {
	const { ctx, out, scope, fail, number } = run;
	const idempotent = out.route.method === 'GET';
	let response: IN8nHttpFullResponse;
	try {
		response = await exchange(ctx, run.connection, out, scope);
	} catch (error) {
		const code = networkErrorCode(error);
		// A read can always be repeated; a POST only when it certainly never left the machine.
		const repeatable = idempotent || (code !== undefined && NOT_SENT_CODES.has(code));
		if (!scope.signal.aborted && repeatable && number <= retryPolicy.transientRetries) {
			return { retryInMs: backoff(number) };
		}
		throw fail.network(code);
	}
	const status = response.statusCode;
	const header = headerValue(response.headers, 'x-request-id');
	const requestId = header === undefined ? undefined : redact(header, run.connection.apiKey);
	const redirect = status >= 300 && status < 400;
	if (status < 300 || (redirect && out.acceptRedirects)) {
		return await accepted(run, response, requestId);
	}
	if (redirect) {
		discard(response.body);
		const location = headerValue(response.headers, 'location');
		throw fail.redirect(status, location, requestId);
	}
	return await refused(run, response, requestId);
}

/** An answer the caller takes: its value, or a broken body read again (GET) or reported. */
async function accepted<R>(run: Attempt<R>, response: IN8nHttpFullResponse, requestId?: string) {
	const received = await run.receive(response, requestId);
	if ('value' in received) return received;
	if (run.scope.signal.aborted) throw run.fail.network();
	if (run.out.route.method === 'GET' && run.number <= retryPolicy.transientRetries) {
		return { retryInMs: backoff(run.number) };
	}
	const status = response.statusCode;
	if (run.tolerate && status < 300) {
		return { value: run.tolerate(received.broken, status, requestId) };
	}
	const { code, problem, snippet } = received.broken;
	const apiMessage = `${problem}${snippet ? `: ${snippet}` : ''}`;
	throw run.fail.answer({ code, httpStatus: status, requestId, apiMessage }, 'unknown');
}

/** An error answer: 429 rate_limited waits for Retry-After, a GET retries 502/503/504, the rest fails. */
async function refused<R>(run: Attempt<R>, response: IN8nHttpFullResponse, requestId?: string) {
	const { scope, fail, number } = run;
	const status = response.statusCode;
	let text = '';
	try {
		const body = await readCapped(response.body, limits.maxErrorBodyBytes, scope, true);
		text = body.toString('utf8');
	} catch {
		if (scope.signal.aborted) throw fail.network();
	}
	const info = parseErrorBody(status, redact(text, run.connection.apiKey), requestId);
	if (status === 429 && rule(info.code).retryAfter) {
		const retryAfter = retryAfterSeconds(headerValue(response.headers, 'retry-after'));
		const seconds = retryAfter ?? backoff(number) / 1000;
		const inTime = seconds * 1000 < scope.deadline - Date.now();
		const allowed = seconds <= retryPolicy.maxRetryAfterSeconds;
		if (number <= retryPolicy.rateLimitRetries && allowed && inTime) {
			return { retryInMs: seconds * 1000 };
		}
		const extra = `gave up after ${number} attempts; the service asked to wait ${seconds} seconds`;
		throw fail.answer(info, 'refused', extra);
	}
	const idempotent = run.out.route.method === 'GET';
	if (TRANSIENT_STATUSES.has(status) && idempotent && number <= retryPolicy.transientRetries) {
		return { retryInMs: backoff(number) };
	}
	if (!run.out.authenticated && (status === 403 || status === 410)) info.code = 'expired_link';
	// A gateway error on a POST says nothing about whether the work behind it ran; the service's
	// own internal_error promises a refund.
	const gateway = status >= 500 && !rule(info.code).refunded;
	throw fail.answer(info, gateway ? 'unknown' : 'refused');
}
