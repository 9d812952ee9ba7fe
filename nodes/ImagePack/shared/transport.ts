/**
 * The only module that talks HTTP. Every request goes through n8n's helpers (so n8n's proxy, TLS and
 * SSRF settings apply), and every request here is bounded:
 *
 * - The key only ever goes to the credential's origin (scheme, host, port): n8n never follows a
 *   redirect for us (it would re-attach `Authorization` on another host). A redirect from an API
 *   endpoint is an error naming its target; the file endpoint's redirect is followed by hand,
 *   without the key, to http(s) targets only.
 * - Time: `timeoutMs` is the whole call (connect, wait, body, retries and Retry-After waits), enforced
 *   by an abort signal that also carries n8n's execution cancel signal (Stop).
 * - Size: JSON answers and error bodies are read with a cap; downloads stop at a per-file cap.
 * - Retries can never charge twice: a generation is sent again only after `429 rate_limited` (the
 *   service did no work) or a refused connection (nothing left this machine).
 * - The API key is masked in everything that comes back: bodies, headers, messages, context.
 */
import type {
	IBinaryData,
	ICredentialsDecrypted,
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	IHttpRequestOptions,
	ILoadOptionsFunctions,
	IN8nHttpFullResponse,
	IPollFunctions,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';

import {
	type ApiErrorInfo,
	englishMessage,
	errorDescription,
	parseErrorBody,
	redact,
	redactDeep,
	retryAfterSeconds,
} from './errors';
import { isPollTeardown, pollTeardownError } from './polling';

/** Where requests come from: operations, the trigger's polls, the editor's list searches. */
export type ApiContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

export const CREDENTIAL_TYPE = 'imagePackApi';

/** Generation may run for 5 minutes; n8n's helpers give up at 300 s unless told otherwise. */
export const GENERATE_TIMEOUT_MS = 330_000;
/** A whole read call (list, detail), retries included. */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** A whole file download (redirects and body). */
export const DOWNLOAD_TIMEOUT_MS = 300_000;

const MIB = 1024 * 1024;
/** Size and hop bounds. Mutable only so tests can lower them; the policy's shape is fixed. */
export const limits = {
	/** A JSON answer larger than this is refused (a list page of 200 records is about 60 KiB). */
	maxJsonBytes: 16 * MIB,
	/** Error bodies are short; only this much of one is read. */
	maxErrorBodyBytes: 64 * 1024,
	/** Default cap per downloaded file (the Max File Size option overrides it). */
	defaultMaxFileBytes: 200 * MIB,
	/** Redirect hops followed (without the key) after the file endpoint's own 302. */
	maxSignedLinkRedirects: 5,
};

/** Retry bounds. Mutable only so tests can shorten the waits; the shape of the policy is fixed. */
export const retryPolicy = {
	/** Further attempts after `429 rate_limited`. */
	rateLimitRetries: 3,
	/** A Retry-After longer than this is not waited for: the error is reported instead. */
	maxRetryAfterSeconds: 60,
	/** Further attempts of an idempotent request after 502/503/504 or a connection error. */
	transientRetries: 2,
	/** First backoff; doubled on every further attempt. */
	backoffMs: 500,
};

export interface Connection {
	/** The credential's base URL without trailing slashes, e.g. `https://example.com`. */
	baseUrl: string;
	apiKey: string;
	/**
	 * The credential as read once, handed to n8n's authenticated helper with every request. Without
	 * it n8n decrypts the credential again per request, and in a poll that builds and disposes a
	 * whole expression isolate each time (≈ 60 ms of CPU per request in n8n 2.41).
	 */
	credential?: ICredentialsDecrypted;
}

export interface ApiRequest {
	method: IHttpRequestMethods;
	/** Path below the base URL, starting with `/api/`. */
	path: string;
	qs?: IDataObject;
	body?: IDataObject;
	headers?: IDataObject;
	/** The whole call, retries and waits included. */
	timeoutMs?: number;
	itemIndex?: number;
	/** Added to the message when a non-idempotent request may have been carried out. */
	uncertainOutcomeHint?: string;
	/**
	 * A 2xx answer that is not a JSON object (cut short, garbled, too large) is returned as
	 * `unreadable` instead of thrown: after a paid generation the caller keeps what it can.
	 */
	tolerateUnreadable?: boolean;
}

export interface ApiResponse<T> {
	body: T;
	status: number;
	/** The `X-Request-Id` response header, quoted when reporting a problem. */
	requestId?: string;
	/** Why a 2xx body could not be read (only with `tolerateUnreadable`); `body` is then `{}`. */
	unreadable?: string;
}

/** Reads and checks the credential once per call: bad settings fail before anything is sent. */
export async function getConnection(ctx: ApiContext, itemIndex = 0): Promise<Connection> {
	const credentials = await ctx.getCredentials(CREDENTIAL_TYPE, itemIndex);
	const selected = ctx.getNode().credentials?.[CREDENTIAL_TYPE];
	const credential: ICredentialsDecrypted = {
		id: selected?.id ?? '',
		name: selected?.name ?? '',
		type: CREDENTIAL_TYPE,
		data: credentials,
	};
	const baseUrl = String(credentials.baseUrl ?? '')
		.trim()
		.replace(/\/+$/, '');
	const apiKey = String(credentials.apiKey ?? '').trim();
	if (!/^https?:\/\/[^/]+/i.test(baseUrl) || !parseUrl(baseUrl)) {
		throw new NodeOperationError(
			ctx.getNode(),
			`The Base URL of the Image Pack API credential must be an http:// or https:// address (got "${redact(baseUrl, apiKey)}")`,
			{ itemIndex },
		);
	}
	if (!apiKey.startsWith('sk_')) {
		throw new NodeOperationError(
			ctx.getNode(),
			'The API key of the Image Pack API credential must start with sk_',
			{
				itemIndex,
				description: 'Copy the whole key from the developer center; it is shown only once.',
			},
		);
	}
	return { baseUrl, apiKey, credential };
}

function parseUrl(text: string): URL | undefined {
	try {
		return new URL(text);
	} catch {
		return undefined;
	}
}

function headerValue(headers: IN8nHttpFullResponse['headers'], name: string): string | undefined {
	const value = headers?.[name] ?? headers?.[name.toLowerCase()];
	if (Array.isArray(value)) return value[0] as string;
	return typeof value === 'string' ? value : undefined;
}

/** The network error code (ECONNREFUSED, ECONNRESET, ...) of an error from n8n's helpers, if any. */
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

/** Errors after which the request certainly never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

function backoff(attempt: number): number {
	return retryPolicy.backoffMs * 2 ** (attempt - 1);
}

/**
 * One call's bounds: a deadline and the execution's cancel signal (Stop), merged into the signal
 * every request, body read and wait of the call listens to.
 */
export interface CallScope {
	signal: AbortSignal;
	/** n8n's execution cancel signal, when the context has one (executions do, polls do not). */
	cancel?: AbortSignal;
	timeoutMs: number;
	deadline: number;
}

/** n8n's cancel signal for this execution (Stop), where the context offers one. */
export function executionCancelSignal(ctx: ApiContext): AbortSignal | undefined {
	const getter = (ctx as { getExecutionCancelSignal?: () => AbortSignal | undefined })
		.getExecutionCancelSignal;
	return typeof getter === 'function' ? getter.call(ctx) : undefined;
}

/** Largest delay a timer takes; longer ones fire at once (Node clamps them to 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

export function openScope(ctx: ApiContext, timeoutMs: number): CallScope {
	const bounded = Math.min(Math.max(1, Math.floor(timeoutMs) || DEFAULT_TIMEOUT_MS), MAX_TIMER_MS);
	const cancel = executionCancelSignal(ctx);
	const timer = AbortSignal.timeout(bounded);
	return {
		signal: cancel ? AbortSignal.any([cancel, timer]) : timer,
		cancel,
		timeoutMs: bounded,
		deadline: Date.now() + bounded,
	};
}

function remainingMs(scope: CallScope): number {
	return Math.max(1, scope.deadline - Date.now());
}

/** Waits `ms`, or rejects as soon as the call is stopped or out of time. */
async function pause(ms: number, scope: CallScope): Promise<void> {
	if (scope.signal.aborted) throw new Error('aborted');
	let onAbort: (() => void) | undefined;
	try {
		await Promise.race([
			sleep(ms),
			new Promise<never>((_resolve, reject) => {
				onAbort = () => reject(new Error('aborted'));
				scope.signal.addEventListener('abort', onAbort, { once: true });
			}),
		]);
	} finally {
		if (onAbort) scope.signal.removeEventListener('abort', onAbort);
	}
}

function apiError(
	ctx: ApiContext,
	request: ApiRequest,
	info: ApiErrorInfo,
	apiKey: string,
	extra?: string,
) {
	const safe = redactDeep(info, apiKey);
	const error = new NodeApiError(ctx.getNode(), safe as unknown as JsonObject, {
		message: redact(englishMessage(safe, request.path), apiKey),
		description: redact(errorDescription(safe, extra), apiKey),
		httpCode: String(safe.httpStatus),
		itemIndex: request.itemIndex,
	});
	// Machine-readable facts for Continue On Fail items (see execution.ts).
	Object.assign(error.context, {
		code: safe.code,
		httpStatus: safe.httpStatus,
		requestId: safe.requestId,
	});
	return error;
}

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

function networkError(
	ctx: ApiContext,
	request: ApiRequest,
	code: string | undefined,
	apiKey: string,
	scope: CallScope,
	detail?: string,
) {
	const cancelled = scope.cancel?.aborted === true;
	const timedOut =
		!cancelled && (scope.signal.aborted || code === 'ETIMEDOUT' || code === 'ECONNABORTED');
	const notSent = code !== undefined && NOT_SENT_CODES.has(code) && !cancelled && !timedOut;
	// The raw code stays out of the message: NodeApiError swaps messages that mention well-known
	// network codes for a generic one, which would drop the "may have been charged" hint.
	const what = cancelled
		? 'The execution was stopped while waiting for the Image Pack API'
		: timedOut
			? `The Image Pack API did not answer within ${Math.round(scope.timeoutMs / 100) / 10} seconds (the timeout covers the whole call, the answer's body included)`
			: notSent
				? `The Image Pack API could not be reached (${NETWORK_WORDS[code]}): check the Base URL of the credential`
				: `The connection to the Image Pack API failed (${(code && NETWORK_WORDS[code]) ?? detail ?? 'network error'})`;
	const hint = !notSent && request.method !== 'GET' ? request.uncertainOutcomeHint : undefined;
	const reason = cancelled ? 'cancelled' : timedOut ? 'timeout' : (code ?? 'unknown');
	const error = new NodeApiError(
		ctx.getNode(),
		{ networkError: reason, httpStatus: 0 } as JsonObject,
		{
			message: redact(hint ? `${what}. ${hint}` : what, apiKey),
			description: redact(`${request.method} ${request.path} · network error: ${reason}`, apiKey),
			itemIndex: request.itemIndex,
		},
	);
	Object.assign(error.context, {
		code: cancelled ? 'cancelled' : timedOut ? 'timeout' : 'network_error',
	});
	return error;
}

/** Marks a body read that went over its cap. */
class BodyTooLarge extends Error {
	readonly code = 'ERR_BODY_TOO_LARGE';

	constructor(readonly maxBytes: number) {
		super(`larger than ${formatBytes(maxBytes)}`);
	}
}

export function formatBytes(bytes: number): string {
	if (bytes >= MIB) return `${Math.round((bytes / MIB) * 10) / 10} MiB`;
	if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
	return `${bytes} bytes`;
}

interface Stream extends AsyncIterable<Buffer | string> {
	destroy?: (error?: Error) => void;
	once?: (event: string, listener: () => void) => void;
}

function isStream(body: unknown): body is Stream {
	return (
		typeof body === 'object' &&
		body !== null &&
		typeof (body as Stream)[Symbol.asyncIterator] === 'function'
	);
}

function discard(body: unknown): void {
	if (isStream(body)) body.destroy?.();
}

/**
 * Reads a body into memory, at most `maxBytes`: with `truncate` the rest is dropped (error bodies),
 * otherwise going over is an error. Stops when the call is stopped or out of time.
 */
async function readBody(
	body: unknown,
	maxBytes: number,
	scope: CallScope,
	truncate = false,
): Promise<Buffer> {
	if (body === undefined || body === null) return Buffer.alloc(0);
	if (Buffer.isBuffer(body)) return body;
	if (typeof body === 'string') return Buffer.from(body);
	if (!isStream(body)) return Buffer.from(JSON.stringify(body));
	const chunks: Buffer[] = [];
	let size = 0;
	const onAbort = () => body.destroy?.(new Error('aborted'));
	scope.signal.addEventListener('abort', onAbort, { once: true });
	try {
		if (scope.signal.aborted) onAbort();
		for await (const chunk of body) {
			const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
			size += buffer.length;
			if (size > maxBytes) {
				body.destroy?.();
				if (truncate) {
					chunks.push(buffer.subarray(0, buffer.length - (size - maxBytes)));
					break;
				}
				throw new BodyTooLarge(maxBytes);
			}
			chunks.push(buffer);
		}
	} finally {
		scope.signal.removeEventListener('abort', onAbort);
	}
	return Buffer.concat(chunks);
}

interface Sending {
	request: ApiRequest;
	apiKey: string;
	/** With the credential (API origin) or without (signed links on the file host). */
	authenticated: boolean;
	/** The credential read at the start of the call (see Connection.credential). */
	credential?: ICredentialsDecrypted;
	scope: CallScope;
	/** Return 3xx answers to the caller (the file endpoint); otherwise a redirect is an error. */
	returnRedirects?: boolean;
}

/** Sends one request through n8n's helpers, bounded by the call's scope, redirects never followed. */
async function exchange(
	ctx: ApiContext,
	options: IHttpRequestOptions,
	{ authenticated, scope, credential }: Sending,
): Promise<IN8nHttpFullResponse> {
	const sent: IHttpRequestOptions = {
		...options,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		disableFollowRedirect: true,
		encoding: 'stream',
		// Also an idle guard for the connect and wait phases; the signal bounds the whole call.
		timeout: remainingMs(scope),
		abortSignal: scope.signal,
	};
	if (!authenticated) {
		// Deliberately the unauthenticated helper: a signed link must never receive the key.
		return (await ctx.helpers.httpRequest(sent)) as IN8nHttpFullResponse;
	}
	// n8n's authenticated helper replaces `abortSignal` with the execution's cancel signal; a view of
	// the context whose cancel signal is this call's (Stop or deadline) keeps both in force.
	const scoped = Object.create(ctx, {
		getExecutionCancelSignal: { value: () => scope.signal },
	}) as ApiContext;
	return (await ctx.helpers.httpRequestWithAuthentication.call(
		scoped,
		CREDENTIAL_TYPE,
		sent,
		credential && { credentialsDecrypted: credential },
	)) as IN8nHttpFullResponse;
}

function isRedirect(status: number): boolean {
	return status >= 300 && status < 400;
}

/**
 * Sends one request with the retry policy and returns the first response below 400 (below 300
 * unless `returnRedirects`). Every retry rule lives here: `429 rate_limited` is retried after
 * Retry-After (bounded, and within the call's time) for every request, since the service did no
 * work; idempotent GETs are also retried on 502/503/504 and connection errors; a POST is otherwise
 * retried only when the connection was refused, i.e. nothing was sent. A generation is never sent
 * twice when it may have run.
 */
async function send(
	ctx: ApiContext,
	options: IHttpRequestOptions,
	sending: Sending,
): Promise<IN8nHttpFullResponse> {
	const { request, apiKey, authenticated, scope } = sending;
	const idempotent = request.method === 'GET';
	const fail = (code?: string, detail?: string) =>
		networkError(ctx, request, code, apiKey, scope, detail);
	for (let attempt = 1; ; attempt++) {
		if (scope.signal.aborted) throw fail();
		let response: IN8nHttpFullResponse;
		try {
			response = await exchange(ctx, options, sending);
		} catch (error) {
			// n8n took the poll's expression engine away: not the network; the caller decides.
			if (isPollTeardown(error)) throw pollTeardownError(ctx.getNode(), error);
			const code = networkErrorCode(error);
			// A read can always be repeated, whatever broke the connection; a POST only when it
			// certainly never left (a generation must not run twice).
			const safeToRepeat = idempotent || (code !== undefined && NOT_SENT_CODES.has(code));
			if (!scope.signal.aborted && safeToRepeat && attempt <= retryPolicy.transientRetries) {
				await pause(backoff(attempt), scope).catch(() => undefined);
				continue;
			}
			throw fail(code);
		}

		const status = response.statusCode;
		if (status < 300 || (isRedirect(status) && sending.returnRedirects)) return response;
		const requestId = redactOptional(headerValue(response.headers, 'x-request-id'), apiKey);
		if (isRedirect(status)) {
			discard(response.body);
			throw redirectError(ctx, request, status, headerValue(response.headers, 'location'), {
				apiKey,
				requestId,
			});
		}

		let text: string;
		try {
			text = (await readBody(response.body, limits.maxErrorBodyBytes, scope, true)).toString(
				'utf8',
			);
		} catch (error) {
			if (scope.signal.aborted) throw fail();
			text = '';
			void error;
		}
		const info = parseErrorBody(status, redact(text, apiKey), requestId);
		if (status === 429 && info.code === 'rate_limited') {
			const wait =
				retryAfterSeconds(headerValue(response.headers, 'retry-after')) ?? backoff(attempt) / 1000;
			const inTime = wait * 1000 < scope.deadline - Date.now();
			if (
				attempt <= retryPolicy.rateLimitRetries &&
				wait <= retryPolicy.maxRetryAfterSeconds &&
				inTime
			) {
				try {
					await pause(wait * 1000, scope);
				} catch {
					throw fail();
				}
				continue;
			}
			const extra = `gave up after ${attempt} attempts; the service asked to wait ${wait} seconds`;
			throw apiError(ctx, request, info, apiKey, extra);
		}
		if (TRANSIENT_STATUSES.has(status) && idempotent && attempt <= retryPolicy.transientRetries) {
			try {
				await pause(backoff(attempt), scope);
			} catch {
				throw fail();
			}
			continue;
		}
		if (!authenticated && (status === 403 || status === 410)) info.code = 'expired_link';
		// A gateway error on a POST says nothing about whether the work behind it ran.
		const uncertain = !idempotent && info.code !== 'internal_error' && status >= 500;
		throw apiError(
			ctx,
			request,
			info,
			apiKey,
			uncertain ? request.uncertainOutcomeHint : undefined,
		);
	}
}

function redactOptional(text: string | undefined, secret: string): string | undefined {
	return text === undefined ? undefined : redact(text, secret);
}

/** A redirect the node will not follow (the key stays home), naming where it pointed. */
function redirectError(
	ctx: ApiContext,
	request: ApiRequest,
	status: number,
	location: string | undefined,
	{ apiKey, requestId }: { apiKey: string; requestId?: string },
) {
	const target = location ? redact(location, apiKey).slice(0, 300) : '(no Location header)';
	const info: ApiErrorInfo = { code: 'unexpected_redirect', httpStatus: status, requestId };
	const error = apiError(
		ctx,
		request,
		info,
		apiKey,
		[
			`redirect target: ${target}`,
			'not followed, so the API key was not sent there',
			request.method !== 'GET' ? request.uncertainOutcomeHint : undefined,
		]
			.filter(Boolean)
			.join(' · '),
	);
	error.message = `The Image Pack API answered ${request.method} ${request.path} with a redirect (HTTP ${status}) to ${target}, which the node does not follow: check the Base URL of the credential`;
	return error;
}

/** Sends one API request and returns its parsed JSON body (see `send` for the retry rules). */
export async function apiRequest<T>(
	ctx: ApiContext,
	request: ApiRequest,
	connection?: Connection,
): Promise<ApiResponse<T>> {
	const { baseUrl, apiKey, credential } = connection ?? (await getConnection(ctx, request.itemIndex));
	const idempotent = request.method === 'GET';
	const scope = openScope(ctx, request.timeoutMs ?? DEFAULT_TIMEOUT_MS);
	const options: IHttpRequestOptions = {
		method: request.method,
		url: `${baseUrl}${request.path}`,
		qs: request.qs,
		body: request.body,
		json: request.body !== undefined,
		headers: { Accept: 'application/json', ...request.headers },
	};
	const sending: Sending = { request, apiKey, authenticated: true, scope, credential };
	for (let attempt = 1; ; attempt++) {
		const response = await send(ctx, options, sending);
		const requestId = redactOptional(headerValue(response.headers, 'x-request-id'), apiKey);
		let problem: string;
		let snippet = '';
		let code = 'non_json_response';
		try {
			const text = (await readBody(response.body, limits.maxJsonBytes, scope)).toString('utf8');
			snippet = redact(text, apiKey).slice(0, 200);
			const parsed: unknown = JSON.parse(text);
			if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
				return { body: redactDeep(parsed, apiKey) as T, status: response.statusCode, requestId };
			}
			problem = 'the answer is JSON but not an object';
		} catch (error) {
			if (scope.signal.aborted) throw networkError(ctx, request, undefined, apiKey, scope);
			if (error instanceof BodyTooLarge) {
				code = 'answer_too_large';
				problem = `the answer is ${error.message}, more than an API answer can be`;
			} else if (error instanceof SyntaxError) {
				problem = snippet ? 'the answer is not JSON' : 'the answer was empty';
			} else {
				code = 'answer_cut_off';
				problem = 'the connection broke before the answer was complete';
			}
		}
		// A truncated or garbled body: a GET can be read again, a POST may have done its work.
		if (idempotent && attempt <= retryPolicy.transientRetries && !scope.signal.aborted) {
			try {
				await pause(backoff(attempt), scope);
			} catch {
				throw networkError(ctx, request, undefined, apiKey, scope);
			}
			continue;
		}
		if (request.tolerateUnreadable && response.statusCode < 300) {
			return {
				body: {} as T,
				status: response.statusCode,
				requestId,
				unreadable: `${problem}${snippet ? ` (it began: ${snippet})` : ''}`,
			};
		}
		const info = {
			code,
			httpStatus: response.statusCode,
			requestId,
			apiMessage: `${problem}${snippet ? `: ${snippet}` : ''}`,
		};
		const hint = idempotent ? undefined : request.uncertainOutcomeHint;
		const error = apiError(ctx, request, info, apiKey, hint);
		if (hint) error.message = redact(`${error.message}. ${hint}`, apiKey);
		throw error;
	}
}

export interface FileDownload {
	/** The response body as a stream, ready for `prepareBinaryData`, bounded in size and time. */
	body: unknown;
	fileName: string;
	mimeType: string;
	contentLength?: number;
}

export interface DownloadLimits {
	/** Cap for this file; default `limits.defaultMaxFileBytes`. */
	maxBytes?: number;
	/** The whole download; default `DOWNLOAD_TIMEOUT_MS`. */
	timeoutMs?: number;
}

const MIME_BY_EXTENSION: Record<string, string> = {
	png: 'image/png',
	jpg: 'image/jpeg',
	jpeg: 'image/jpeg',
	webp: 'image/webp',
	gif: 'image/gif',
	avif: 'image/avif',
};

export function mimeTypeFor(fileName: string, contentType?: string): string {
	const declared = contentType?.split(';')[0].trim().toLowerCase();
	if (declared && declared !== 'application/octet-stream' && declared !== 'binary/octet-stream') {
		return declared;
	}
	const extension = fileName.split('.').pop()?.toLowerCase() ?? '';
	return MIME_BY_EXTENSION[extension] ?? 'application/octet-stream';
}

/** A file reference that is no usable URL; the message says what was wrong. */
export class FileReferenceError extends Error {}

function decodeName(text: string): string {
	try {
		return decodeURIComponent(text);
	} catch {
		return text; // a stray "%" that is no escape: keep the name as written
	}
}

/**
 * Where a file reference points. The API's paths (`/api/file/<name>`), bare file names and full URLs
 * on the credential's own origin (scheme, host and port) get the API key; a URL on any other origin
 * is fetched without credentials.
 */
export function resolveFileReference(
	reference: string,
	baseUrl: string,
): { url: string; authenticated: boolean; fileName: string } {
	const trimmed = reference.trim();
	const root = baseUrl.trim().replace(/\/+$/, '');
	const base = parseUrl(`${root}/`);
	if (!base) throw new FileReferenceError(`the credential's Base URL "${root}" is not a valid URL`);
	let url: URL | undefined;
	if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed) && !/^https?:\/\//i.test(trimmed)) {
		throw new FileReferenceError(
			`"${trimmed.slice(0, 100)}" is not an http(s) address; only http:// and https:// files are downloaded`,
		);
	}
	if (/^https?:\/\//i.test(trimmed)) {
		url = parseUrl(trimmed);
	} else if (trimmed.startsWith('/')) {
		url = parseUrl(`${root}${trimmed}`);
	} else {
		url = parseUrl(`${root}/api/file/${encodeURIComponent(trimmed)}`);
	}
	if (!url) throw new FileReferenceError(`"${trimmed.slice(0, 100)}" is not a valid URL`);
	const fileName = decodeName(url.pathname.split('/').pop() ?? '') || 'file';
	return { url: url.toString(), authenticated: url.origin === base.origin, fileName };
}

/** Bounds a response body stream: at most `maxBytes`, and destroyed when the call is stopped. */
function guardStream(body: unknown, maxBytes: number, scope: CallScope): void {
	if (!isStream(body)) return;
	const stream = body as Stream & { push?: (chunk: unknown, encoding?: string) => boolean };
	const onAbort = () => stream.destroy?.(new Error('aborted'));
	scope.signal.addEventListener('abort', onAbort, { once: true });
	stream.once?.('close', () => scope.signal.removeEventListener('abort', onAbort));
	if (scope.signal.aborted) onAbort();
	if (typeof stream.push !== 'function') return;
	// Counted where bytes enter the stream, so the consumer's flow control stays untouched.
	const push = stream.push.bind(stream);
	let size = 0;
	stream.push = (chunk: unknown, encoding?: string) => {
		size += (chunk as { length?: number } | null)?.length ?? 0;
		if (size > maxBytes) {
			stream.destroy?.(new BodyTooLarge(maxBytes));
			return false;
		}
		return push(chunk, encoding);
	};
}

/**
 * Downloads a file. The API answers `/api/file/<name>` with a 302 to a signed link; that link (and
 * any further hop, at most `limits.maxSignedLinkRedirects`) is fetched without the Authorization
 * header and only over http(s). The body is streamed, capped and bounded in time by `scope`.
 */
async function openDownload(
	ctx: ApiContext,
	reference: string,
	itemIndex: number,
	{ baseUrl, apiKey, credential }: Connection,
	scope: CallScope,
	maxBytes: number,
): Promise<FileDownload> {
	let target: ReturnType<typeof resolveFileReference>;
	try {
		target = resolveFileReference(reference, baseUrl);
	} catch (error) {
		throw new NodeOperationError(
			ctx.getNode(),
			redact(`Item ${itemIndex}: File URL ${(error as Error).message}`, apiKey),
			{
				itemIndex,
				description:
					'Use an images[].url, a download_url, a file name or a URL on the credential’s host.',
			},
		);
	}
	const request: ApiRequest = { method: 'GET', path: new URL(target.url).pathname, itemIndex };
	let url = target.url;
	let authenticated = target.authenticated;
	for (let hop = 0; ; hop++) {
		const sending: Sending = {
			request: authenticated ? request : { ...request, path: 'signed download link' },
			apiKey,
			authenticated,
			credential,
			scope,
			returnRedirects: true,
		};
		const response = await send(ctx, { method: 'GET', url }, sending);
		if (!isRedirect(response.statusCode)) {
			return fileFrom(response, target.fileName, maxBytes, scope, { ctx, request, apiKey });
		}
		discard(response.body);
		const location = headerValue(response.headers, 'location');
		const next = location ? parseUrl(new URL(location, url).toString().slice(0, 8192)) : undefined;
		const problem = !location
			? 'has no Location header'
			: !next
				? `points to "${location.slice(0, 100)}", which is not a valid URL`
				: !/^https?:$/.test(next.protocol)
					? `points to a ${next.protocol} address, which is never followed`
					: hop >= limits.maxSignedLinkRedirects
						? `is hop ${hop + 1}; at most ${limits.maxSignedLinkRedirects} redirects are followed`
						: undefined;
		if (problem) {
			const info: ApiErrorInfo = {
				code: 'bad_redirect',
				httpStatus: response.statusCode,
				requestId: redactOptional(headerValue(response.headers, 'x-request-id'), apiKey),
				apiMessage: `the redirect ${problem}`,
			};
			throw apiError(ctx, request, info, apiKey);
		}
		url = next!.toString();
		// The key stays with the API: every hop after the first is fetched without it.
		authenticated = false;
	}
}

/** Downloads a file and returns its bounded stream; see `downloadBinary` for the usual path. */
export async function downloadFile(
	ctx: ApiContext,
	reference: string,
	itemIndex: number,
	connection?: Connection,
	bounds: DownloadLimits = {},
): Promise<FileDownload> {
	const resolved = connection ?? (await getConnection(ctx, itemIndex));
	const scope = openScope(ctx, bounds.timeoutMs ?? DOWNLOAD_TIMEOUT_MS);
	return await openDownload(
		ctx,
		reference,
		itemIndex,
		resolved,
		scope,
		bounds.maxBytes ?? limits.defaultMaxFileBytes,
	);
}

/**
 * Downloads a file (see `downloadFile`) straight into n8n's binary data, the one place where files
 * enter it: streamed, named, typed, within its size cap and time.
 */
export async function downloadBinary(
	ctx: IExecuteFunctions | IPollFunctions,
	reference: string,
	itemIndex: number,
	connection?: Connection,
	fileName?: string,
	bounds: DownloadLimits = {},
): Promise<IBinaryData> {
	const resolved = connection ?? (await getConnection(ctx, itemIndex));
	const scope = openScope(ctx, bounds.timeoutMs ?? DOWNLOAD_TIMEOUT_MS);
	const maxBytes = bounds.maxBytes ?? limits.defaultMaxFileBytes;
	const file = await openDownload(ctx, reference, itemIndex, resolved, scope, maxBytes);
	const request: ApiRequest = { method: 'GET', path: 'file download', itemIndex };
	let binary: IBinaryData;
	try {
		binary = await ctx.helpers.prepareBinaryData(
			file.body as Buffer,
			fileName || file.fileName,
			file.mimeType,
		);
	} catch (error) {
		if (error instanceof BodyTooLarge)
			throw tooLargeError(ctx, itemIndex, error.maxBytes, resolved.apiKey);
		throw networkError(ctx, request, 'ERR_BAD_RESPONSE', resolved.apiKey, scope);
	}
	if (
		file.contentLength !== undefined &&
		binary.bytes !== undefined &&
		binary.bytes < file.contentLength
	) {
		throw networkError(ctx, request, 'ERR_BAD_RESPONSE', resolved.apiKey, scope);
	}
	// n8n versions that do not count the bytes still get the announced length.
	binary.bytes ??= file.contentLength;
	return binary;
}

function tooLargeError(ctx: ApiContext, itemIndex: number, maxBytes: number, apiKey: string) {
	const error = new NodeOperationError(
		ctx.getNode(),
		redact(
			`Item ${itemIndex}: the file is larger than ${formatBytes(maxBytes)}, the Max File Size; the download was stopped`,
			apiKey,
		),
		{ itemIndex, description: 'Raise the Max File Size option if files this large are expected.' },
	);
	Object.assign(error.context, { code: 'file_too_large' });
	return error;
}

function fileFrom(
	response: IN8nHttpFullResponse,
	fallbackName: string,
	maxBytes: number,
	scope: CallScope,
	owner: { ctx: ApiContext; request: ApiRequest; apiKey: string },
): FileDownload {
	const disposition = headerValue(response.headers, 'content-disposition') ?? '';
	const named = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition)?.[1];
	const fileName = (named && decodeName(named).replace(/[/\\]/g, '_').trim()) || fallbackName;
	const length = Number(headerValue(response.headers, 'content-length'));
	const contentLength = Number.isFinite(length) && length > 0 ? length : undefined;
	if (contentLength !== undefined && contentLength > maxBytes) {
		discard(response.body);
		throw tooLargeError(owner.ctx, owner.request.itemIndex ?? 0, maxBytes, owner.apiKey);
	}
	guardStream(response.body, maxBytes, scope);
	return {
		body: response.body,
		fileName,
		mimeType: mimeTypeFor(fileName, headerValue(response.headers, 'content-type')),
		contentLength,
	};
}
