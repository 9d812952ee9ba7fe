/**
 * Files. The API answers `/api/file/<name>` with a 302 to a signed link valid for one hour, which
 * clients must follow. A download fetches that link (and any further hop, at most
 * `limits.maxSignedLinkRedirects`) without the Authorization header and only over http(s); bodies
 * are streamed into n8n's binary data, capped in size and bounded in time.
 *
 * Signed links: for people who cannot hold the key (a chat user, a Slack channel) the node hands out
 * that link instead of the file: one authenticated GET, the redirect not followed, its `Location`
 * read, nothing downloaded. The link itself is never requested, so the host that serves it never
 * sees the key, and a link that carries the key is refused rather than handed out.
 */
import type {
	IBinaryData,
	IExecuteFunctions,
	IN8nHttpFullResponse,
	IPollFunctions,
} from 'n8n-workflow';

import { imagePackError } from '../shared/errors';
import { Failures, headerValue } from './answers';
import { BodyTooLarge, discard, guardStream } from './body';
import {
	type ApiContext,
	type CallOptions,
	type CallScope,
	type Outgoing,
	ROUTES,
	decodeName,
	openScope,
	parseUrl,
	resolveFileReference,
} from './connection';
import { type Connection } from './credential';
import {
	DEFAULT_MAX_FILE_BYTES,
	LINK_TIMEOUT_MS,
	SIGNED_LINK_MARGIN_MS,
	SIGNED_LINK_VALIDITY_MS,
	formatBytes,
	limits,
} from './limits';
import { send } from './request';

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

// Signed links.

export interface SignedLink {
	/** The direct link: opens the file without the API key. */
	url: string;
	/** ISO time by which the link still works: its hour counted from before the request, less a margin. */
	expiresAt: string;
}

/** What is wrong with a `Location` as a link to hand out, or the link. */
function checkedLocation(location: string | undefined, from: string, apiKey: string): URL | string {
	if (!location) return 'has no Location header';
	const url = parseUrl(location.slice(0, 8192), from);
	if (!url) return 'points to something that is not a valid URL';
	if (!/^https?:$/.test(url.protocol)) return `points to a ${url.protocol} address`;
	// Checked on the decoded form too: an escaped key would still be the key.
	if (url.toString().includes(apiKey) || decodeName(url.toString()).includes(apiKey)) {
		return 'carries the API key, so it is not handed out';
	}
	if (url.username || url.password) return 'carries credentials, so it is not handed out';
	return url;
}

/**
 * Resolves a file reference (an `images[].url` path, a bare file name, or a URL on the credential's
 * origin) to its signed link. Goes through the one send loop: a GET, retried on 429 / 5xx / broken
 * connections within `timeoutMs` (default `LINK_TIMEOUT_MS`); an answer other than a redirect is an
 * error with its facts.
 */
export async function signedFileLink(
	ctx: ApiContext,
	connection: Connection,
	reference: string,
	{ itemIndex, timeoutMs = LINK_TIMEOUT_MS }: Omit<CallOptions, 'deadline'> = {},
): Promise<SignedLink> {
	let target: ReturnType<typeof resolveFileReference> | undefined;
	try {
		target = resolveFileReference(reference, connection.baseUrl);
	} catch {
		target = undefined;
	}
	if (!target?.authenticated) {
		// Only the API signs links: a file elsewhere has no signed link to ask for (and gets no key).
		throw imagePackError(
			ctx.getNode(),
			{ code: 'not_api_file', charge: 'not_sent', itemIndex },
			{
				message: `"${String(reference).slice(0, 100)}" is not a file of the Image Pack API, so it has no signed link`,
				secret: connection.apiKey,
			},
		);
	}
	const { url } = target;
	const scope = openScope(ctx, timeoutMs);
	const out = fileRequest(url, true, itemIndex);
	const fail = new Failures(ctx, connection, out, scope);
	// The hour starts when the service signs; counting from before sending keeps the expiry on the safe side.
	const sentAt = Date.now();
	const response = await send(ctx, connection, out, scope, async (answer) => ({ value: answer }));
	discard(response.body);
	if (response.statusCode < 300) {
		const problem =
			'the file endpoint served the file itself instead of redirecting to a signed link';
		throw fail.fileAnswer(response, 'no_signed_link', problem);
	}
	const link = checkedLocation(headerValue(response.headers, 'location'), url, connection.apiKey);
	if (typeof link === 'string') {
		const message = `The file endpoint's redirect ${link}: no signed link was made`;
		throw fail.fileAnswer(response, 'bad_redirect', `the redirect ${link}`, message);
	}
	const expiresAt = new Date(sentAt + SIGNED_LINK_VALIDITY_MS - SIGNED_LINK_MARGIN_MS);
	return { url: link.toString(), expiresAt: expiresAt.toISOString() };
}
