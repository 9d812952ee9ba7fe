/**
 * The only module that talks HTTP. Every request goes through n8n's helpers (so n8n's proxy, TLS and
 * cancellation settings apply), with explicit timeouts, English errors chosen by `error.code`, bounded
 * retries that can never charge twice, and file redirects followed without credentials.
 */
import type {
	IBinaryData,
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
	retryAfterSeconds,
} from './errors';

/** Where requests come from: operations, the trigger's polls, the editor's list searches. */
export type ApiContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

export const CREDENTIAL_TYPE = 'imagePackApi';

/** Generation may run for 5 minutes; n8n's helpers give up at 300 s unless told otherwise. */
export const GENERATE_TIMEOUT_MS = 330_000;
export const DEFAULT_TIMEOUT_MS = 60_000;

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
}

export interface ApiRequest {
	method: IHttpRequestMethods;
	/** Path below the base URL, starting with `/api/`. */
	path: string;
	qs?: IDataObject;
	body?: IDataObject;
	headers?: IDataObject;
	timeoutMs?: number;
	itemIndex?: number;
	/** Added to the message when a non-idempotent request may have been carried out. */
	uncertainOutcomeHint?: string;
}

export interface ApiResponse<T> {
	body: T;
	status: number;
	/** The `X-Request-Id` response header, quoted when reporting a problem. */
	requestId?: string;
}

/** Reads and checks the credential once per call: bad settings fail before anything is sent. */
export async function getConnection(ctx: ApiContext, itemIndex = 0): Promise<Connection> {
	const credentials = await ctx.getCredentials(CREDENTIAL_TYPE, itemIndex);
	const baseUrl = String(credentials.baseUrl ?? '')
		.trim()
		.replace(/\/+$/, '');
	const apiKey = String(credentials.apiKey ?? '').trim();
	if (!/^https?:\/\/[^/]+/i.test(baseUrl)) {
		throw new NodeOperationError(
			ctx.getNode(),
			`The Base URL of the Image Pack API credential must start with http:// or https:// (got "${baseUrl}")`,
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
	return { baseUrl, apiKey };
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
	return undefined;
}

/** Errors after which the request certainly never reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);
/** The execution was stopped by the user: never retried. */
const CANCELED_CODE = 'ERR_CANCELED';
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

function backoff(attempt: number): number {
	return retryPolicy.backoffMs * 2 ** (attempt - 1);
}

function apiError(
	ctx: ApiContext,
	request: ApiRequest,
	info: ApiErrorInfo,
	apiKey: string,
	extra?: string,
) {
	const message = englishMessage(info, request.path);
	const safe = (text: string) => redact(text, apiKey);
	const details = { ...info, apiMessage: info.apiMessage && safe(info.apiMessage) };
	const error = new NodeApiError(ctx.getNode(), details as unknown as JsonObject, {
		message: safe(message),
		description: safe(errorDescription(details, extra)),
		httpCode: String(info.httpStatus),
		itemIndex: request.itemIndex,
	});
	// Machine-readable facts for Continue On Fail items (see execution.ts).
	Object.assign(error.context, {
		code: info.code,
		httpStatus: info.httpStatus,
		requestId: info.requestId,
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
	ERR_BAD_RESPONSE: 'the answer was cut off',
};

function networkError(
	ctx: ApiContext,
	request: ApiRequest,
	code: string | undefined,
	apiKey: string,
) {
	const timedOut = code === 'ETIMEDOUT' || code === 'ECONNABORTED';
	const notSent = code !== undefined && NOT_SENT_CODES.has(code);
	// The raw code stays out of the message: NodeApiError swaps messages that mention well-known
	// network codes for a generic one, which would drop the "may have been charged" hint.
	const what = timedOut
		? `The Image Pack API did not answer within ${Math.round((request.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} seconds`
		: notSent
			? `The Image Pack API could not be reached (${NETWORK_WORDS[code]}): check the Base URL of the credential`
			: `The connection to the Image Pack API failed (${(code && NETWORK_WORDS[code]) ?? 'network error'})`;
	const hint = !notSent && request.method !== 'GET' ? request.uncertainOutcomeHint : undefined;
	const error = new NodeApiError(
		ctx.getNode(),
		{ networkError: code ?? 'unknown', httpStatus: 0 } as JsonObject,
		{
			message: redact(hint ? `${what}. ${hint}` : what, apiKey),
			description: `${request.method} ${request.path} · network error: ${code ?? 'unknown'}`,
			itemIndex: request.itemIndex,
		},
	);
	Object.assign(error.context, { code: timedOut ? 'timeout' : 'network_error' });
	return error;
}

async function readBodyText(body: unknown): Promise<string> {
	if (typeof body === 'string') return body;
	if (body === undefined || body === null) return '';
	if (body instanceof Buffer) return body.toString('utf8');
	if (typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function')
		return JSON.stringify(body);
	const chunks: Buffer[] = [];
	let size = 0;
	// Error bodies are small; never read more than 64 KiB of one.
	for await (const chunk of body as AsyncIterable<Buffer | string>) {
		const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
		chunks.push(buffer);
		size += buffer.length;
		if (size > 64 * 1024) break;
	}
	return Buffer.concat(chunks).toString('utf8');
}

interface Sending {
	request: ApiRequest;
	apiKey: string;
	/** With the credential (API host) or without (signed links on the file host). */
	authenticated: boolean;
}

/**
 * Sends one request with the retry policy and returns the first response below 400. Every retry rule
 * lives here: `429 rate_limited` is retried after Retry-After (bounded) for every request, since the
 * service did no work; idempotent GETs are also retried on 502/503/504 and connection errors; a POST
 * is otherwise retried only when the connection was refused, i.e. nothing was sent. A generation is
 * never sent twice when it may have run.
 */
async function send(
	ctx: ApiContext,
	options: IHttpRequestOptions,
	{ request, apiKey, authenticated }: Sending,
) {
	const idempotent = request.method === 'GET';
	for (let attempt = 1; ; attempt++) {
		let response: IN8nHttpFullResponse;
		try {
			const sent = { ...options, returnFullResponse: true, ignoreHttpStatusErrors: true };
			response = (await (authenticated
				? ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_TYPE, sent)
				: // Deliberately the unauthenticated helper: a signed link must never receive the key.
					ctx.helpers.httpRequest(sent))) as IN8nHttpFullResponse;
		} catch (error) {
			const code = networkErrorCode(error);
			// A read can always be repeated, whatever broke the connection; a POST only when it
			// certainly never left (a generation must not run twice).
			const safeToRepeat = idempotent || (code !== undefined && NOT_SENT_CODES.has(code));
			if (code !== CANCELED_CODE && safeToRepeat && attempt <= retryPolicy.transientRetries) {
				await sleep(backoff(attempt));
				continue;
			}
			throw networkError(ctx, request, code, apiKey);
		}

		const status = response.statusCode;
		if (status < 400) return response;

		const requestId = headerValue(response.headers, 'x-request-id');
		const info = parseErrorBody(status, await readBodyText(response.body), requestId);
		if (status === 429 && info.code === 'rate_limited') {
			const wait =
				retryAfterSeconds(headerValue(response.headers, 'retry-after')) ?? backoff(attempt) / 1000;
			if (attempt <= retryPolicy.rateLimitRetries && wait <= retryPolicy.maxRetryAfterSeconds) {
				await sleep(wait * 1000);
				continue;
			}
			const extra = `gave up after ${attempt} attempts; the service asked to wait ${wait} seconds`;
			throw apiError(ctx, request, info, apiKey, extra);
		}
		if (TRANSIENT_STATUSES.has(status) && idempotent && attempt <= retryPolicy.transientRetries) {
			await sleep(backoff(attempt));
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

/** Sends one API request and returns its parsed JSON body (see `send` for the retry rules). */
export async function apiRequest<T>(
	ctx: ApiContext,
	request: ApiRequest,
	connection?: Connection,
): Promise<ApiResponse<T>> {
	const { baseUrl, apiKey } = connection ?? (await getConnection(ctx, request.itemIndex));
	const idempotent = request.method === 'GET';
	const options: IHttpRequestOptions = {
		method: request.method,
		url: `${baseUrl}${request.path}`,
		qs: request.qs,
		body: request.body,
		json: request.body !== undefined,
		headers: { Accept: 'application/json', ...request.headers },
		timeout: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
		// Raw text, so a malformed body becomes a clear error instead of a string passed on as data.
		encoding: 'text',
	};
	for (let attempt = 1; ; attempt++) {
		const response = await send(ctx, options, { request, apiKey, authenticated: true });
		const requestId = headerValue(response.headers, 'x-request-id');
		const text = await readBodyText(response.body);
		try {
			return { body: JSON.parse(text) as T, status: response.statusCode, requestId };
		} catch {
			// A truncated or garbled body: a GET can be read again, a POST may have done its work.
			if (idempotent && attempt <= retryPolicy.transientRetries) {
				await sleep(backoff(attempt));
				continue;
			}
			const info = {
				code: 'non_json_response',
				httpStatus: response.statusCode,
				requestId,
				apiMessage: text.slice(0, 200),
			};
			throw apiError(
				ctx,
				request,
				info,
				apiKey,
				idempotent ? undefined : request.uncertainOutcomeHint,
			);
		}
	}
}

export interface FileDownload {
	/** The response body as a stream, ready for `prepareBinaryData`. */
	body: unknown;
	fileName: string;
	mimeType: string;
	contentLength?: number;
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

/**
 * Where a file reference points. The API's paths (`/api/file/<name>`), bare file names and full URLs
 * on the credential's own host get the API key; any other URL is fetched without credentials.
 */
export function resolveFileReference(
	reference: string,
	baseUrl: string,
): { url: string; authenticated: boolean; fileName: string } {
	const trimmed = reference.trim();
	const root = baseUrl.trim().replace(/\/+$/, '');
	const base = new URL(`${root}/`);
	let url: URL;
	if (/^https?:\/\//i.test(trimmed)) {
		url = new URL(trimmed);
	} else if (trimmed.startsWith('/')) {
		url = new URL(`${root}${trimmed}`);
	} else {
		url = new URL(`${root}/api/file/${encodeURIComponent(trimmed)}`);
	}
	const last = url.pathname.split('/').pop() ?? '';
	let fileName: string;
	try {
		fileName = decodeURIComponent(last);
	} catch {
		fileName = last; // a stray "%" that is no escape: keep the name as written
	}
	fileName ||= 'file';
	return { url: url.toString(), authenticated: url.origin === base.origin, fileName };
}

/**
 * Downloads a file. The API answers `/api/file/<name>` with a 302 to a signed link; that link is
 * fetched without the Authorization header (n8n's helpers would otherwise forward it to the other
 * host) and streamed, so large images never sit in memory twice.
 */
export async function downloadFile(
	ctx: ApiContext,
	reference: string,
	itemIndex: number,
	connection?: Connection,
): Promise<FileDownload> {
	const { baseUrl, apiKey } = connection ?? (await getConnection(ctx, itemIndex));
	const target = resolveFileReference(reference, baseUrl);
	const request: ApiRequest = { method: 'GET', path: new URL(target.url).pathname, itemIndex };
	const options: IHttpRequestOptions = {
		method: 'GET',
		timeout: DEFAULT_TIMEOUT_MS,
		encoding: 'stream',
		url: target.url,
	};
	let signedUrl = target.url;

	if (target.authenticated) {
		const response = await send(
			ctx,
			{ ...options, disableFollowRedirect: true },
			{ request, apiKey, authenticated: true },
		);
		const location = headerValue(response.headers, 'location');
		if (response.statusCode < 300) return fileFrom(response, target.fileName);
		(response.body as { destroy?: () => void } | undefined)?.destroy?.();
		if (!location) {
			const info = {
				code: 'redirect_without_location',
				httpStatus: response.statusCode,
				requestId: headerValue(response.headers, 'x-request-id'),
			};
			throw apiError(ctx, request, info, apiKey);
		}
		signedUrl = new URL(location, target.url).toString();
	}
	const signed = {
		request: { ...request, path: 'signed download link' },
		apiKey,
		authenticated: false,
	};
	const response = await send(ctx, { ...options, url: signedUrl }, signed);
	return fileFrom(response, target.fileName);
}

/**
 * Downloads a file (see `downloadFile`) straight into n8n's binary data, the one place where files
 * enter it: streamed, named, typed.
 */
export async function downloadBinary(
	ctx: IExecuteFunctions | IPollFunctions,
	reference: string,
	itemIndex: number,
	connection?: Connection,
	fileName?: string,
): Promise<IBinaryData> {
	const file = await downloadFile(ctx, reference, itemIndex, connection);
	const binary = await ctx.helpers.prepareBinaryData(
		file.body as Buffer,
		fileName || file.fileName,
		file.mimeType,
	);
	// n8n versions that do not count the bytes still get the announced length.
	binary.bytes ??= file.contentLength;
	return binary;
}

function fileFrom(response: IN8nHttpFullResponse, fallbackName: string): FileDownload {
	const disposition = headerValue(response.headers, 'content-disposition') ?? '';
	const named = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition)?.[1];
	const fileName = named ? decodeURIComponent(named) : fallbackName;
	const length = Number(headerValue(response.headers, 'content-length'));
	return {
		body: response.body,
		fileName,
		mimeType: mimeTypeFor(fileName, headerValue(response.headers, 'content-type')),
		contentLength: Number.isFinite(length) && length > 0 ? length : undefined,
	};
}
