/**
 * Files. The API answers `/api/file/<name>` with a 302 to a signed link valid for one hour; that link
 * (and any further hop, at most `limits.maxSignedLinkRedirects`) is fetched without the
 * Authorization header and only over http(s). Bodies are streamed into n8n's binary data, capped in
 * size and bounded in time.
 */
import type {
	IBinaryData,
	IExecuteFunctions,
	IN8nHttpFullResponse,
	IPollFunctions,
} from 'n8n-workflow';

import { imagePackError } from '../shared/errors';
import { BodyTooLarge, discard, guardStream } from './body';
import { type ApiContext, type Connection, parseUrl } from './connection';
import { DEFAULT_MAX_FILE_BYTES, formatBytes, limits } from './limits';
import { type CallOptions, type Outgoing, ROUTES } from './routes';
import { type CallScope, openScope } from './scope';
import { Failures } from './failures';
import { headerValue } from './receive';
import { send } from './send';

interface FileOptions extends Omit<CallOptions, 'deadline'> {
	/** The binary's file name; default the server's or the reference's. */
	fileName?: string;
	/** Cap for this file; default the Max File Size option's default. */
	maxBytes?: number;
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

/** Percent-decoded text; a stray "%" that is no escape is kept as written. */
export function decodeName(text: string): string {
	try {
		return decodeURIComponent(text);
	} catch {
		return text;
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
	const absolute = /^https?:\/\//i.test(trimmed);
	if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed) && !absolute) {
		throw new FileReferenceError(
			`"${trimmed.slice(0, 100)}" is not an http(s) address; only http:// and https:// files are downloaded`,
		);
	}
	// A path on the API's origin, or a bare file name of the file endpoint.
	const path = trimmed.startsWith('/') ? trimmed : `/api/file/${encodeURIComponent(trimmed)}`;
	const url = parseUrl(absolute ? trimmed : `${root}${path}`);
	if (!url) throw new FileReferenceError(`"${trimmed.slice(0, 100)}" is not a valid URL`);
	const fileName = decodeName(url.pathname.split('/').pop() ?? '') || 'file';
	return { url: url.toString(), authenticated: url.origin === base.origin, fileName };
}

function tooLarge(ctx: ApiContext, itemIndex: number, maxBytes: number, { apiKey }: Connection) {
	return imagePackError(
		ctx.getNode(),
		{ code: 'file_too_large', charge: 'not_charged', itemIndex },
		{
			message: `the file is larger than ${formatBytes(maxBytes)}, the Max File Size; the download was stopped`,
			description: 'Raise the Max File Size option if files this large are expected.',
			namesItem: true,
			secret: apiKey,
		},
	);
}

/** The first request for a file: on the file route, its redirect handed back, not refused. */
export function fileRequest(url: string, authenticated: boolean, itemIndex?: number): Outgoing {
	const path = new URL(url).pathname;
	return { route: ROUTES.file, url, path, itemIndex, authenticated, acceptRedirects: true };
}

/** Where the next hop of a redirect goes, or what is wrong with it. */
function nextHop(response: IN8nHttpFullResponse, url: string, hop: number): URL | string {
	const location = headerValue(response.headers, 'location');
	if (!location) return 'has no Location header';
	const next = parseUrl(location.slice(0, 8192), url);
	if (!next) return `points to "${location.slice(0, 100)}", which is not a valid URL`;
	if (!/^https?:$/.test(next.protocol))
		return `points to a ${next.protocol} address, which is never followed`;
	if (hop >= limits.maxSignedLinkRedirects) {
		return `is hop ${hop + 1}; at most ${limits.maxSignedLinkRedirects} redirects are followed`;
	}
	return next;
}

/**
 * Opens a file: its body as a stream, ready for `prepareBinaryData` and bounded in size and time,
 * its name, type and announced length. The key goes only with the first request, and only when the
 * reference is on the credential's origin.
 */
async function openFile(
	ctx: ApiContext,
	connection: Connection,
	reference: string,
	{ itemIndex = 0, maxBytes = DEFAULT_MAX_FILE_BYTES }: FileOptions,
	scope: CallScope,
) {
	let target: ReturnType<typeof resolveFileReference>;
	try {
		target = resolveFileReference(reference, connection.baseUrl);
	} catch (error) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'invalid_parameter', parameter: 'fileUrl', charge: 'not_sent', itemIndex },
			{
				message: `File URL ${(error as Error).message}`,
				description:
					'Use an images[].url, a download_url, a file name or a URL on the credential’s host.',
				namesItem: true,
				secret: connection.apiKey,
			},
		);
	}
	let url = target.url;
	const first = fileRequest(url, target.authenticated, itemIndex);
	let out = first;
	for (let hop = 0; ; hop++) {
		const response = await send(ctx, connection, out, scope, async (answer) => ({ value: answer }));
		if (response.statusCode < 300 || response.statusCode >= 400) {
			const header = (name: string) => headerValue(response.headers, name);
			const named = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(
				header('content-disposition') ?? '',
			);
			const fileName =
				(named && decodeName(named[1]).replace(/[/\\]/g, '_').trim()) || target.fileName;
			const length = Number(header('content-length'));
			const contentLength = Number.isFinite(length) && length > 0 ? length : undefined;
			if (contentLength !== undefined && contentLength > maxBytes) {
				discard(response.body);
				throw tooLarge(ctx, itemIndex, maxBytes, connection);
			}
			guardStream(response.body, maxBytes, scope);
			const mimeType = mimeTypeFor(fileName, header('content-type'));
			return { body: response.body, fileName, mimeType, contentLength };
		}
		discard(response.body);
		const next = nextHop(response, url, hop);
		if (typeof next === 'string') {
			const fail = new Failures(ctx, connection, first, scope);
			throw fail.fileAnswer(response, 'bad_redirect', `the redirect ${next}`);
		}
		url = next.toString();
		// The key stays with the API: every hop after the first is fetched without it.
		out = { ...first, url, path: 'signed download link', authenticated: false };
	}
}

/**
 * Downloads a file straight into n8n's binary data, the one place where files enter it: streamed,
 * named, typed, within its size cap and time.
 */
export async function downloadBinary(
	ctx: IExecuteFunctions | IPollFunctions,
	connection: Connection,
	reference: string,
	options: FileOptions = {},
): Promise<IBinaryData> {
	const itemIndex = options.itemIndex ?? 0;
	const scope = openScope(ctx, options.timeoutMs ?? ROUTES.file.timeoutMs);
	const file = await openFile(ctx, connection, reference, options, scope);
	const cutOff = () =>
		new Failures(
			ctx,
			connection,
			{ route: ROUTES.file, url: '', path: 'file download', itemIndex, authenticated: false },
			scope,
		).network('ERR_BAD_RESPONSE');
	const fileName = options.fileName || file.fileName;
	let binary: IBinaryData;
	try {
		binary = await ctx.helpers.prepareBinaryData(file.body as Buffer, fileName, file.mimeType);
	} catch (error) {
		if (error instanceof BodyTooLarge) throw tooLarge(ctx, itemIndex, error.maxBytes, connection);
		throw cutOff();
	}
	// Fewer bytes than announced: the body broke off.
	if (binary.bytes !== undefined && binary.bytes < (file.contentLength ?? 0)) throw cutOff();
	// n8n versions that do not count the bytes still get the announced length.
	binary.bytes ??= file.contentLength;
	return binary;
}
