/**
 * Signed links: the file endpoint answers `/api/file/<name>` with a 302 to a direct link valid for one
 * hour (API document §4.4). For people who cannot hold the key (a chat user, a Slack channel) the node
 * hands out that link instead of the file: one authenticated GET, the redirect not followed, its
 * `Location` read, nothing downloaded. The link itself is never requested, so the host that serves it
 * never sees the key, and a link that carries the key is refused rather than handed out.
 */
import { imagePackError } from '../shared/errors';
import { discard } from './body';
import { type ApiContext, type Connection, parseUrl } from './connection';
import { decodeName, fileRequest, resolveFileReference } from './download';
import { LINK_TIMEOUT_MS, SIGNED_LINK_MARGIN_MS, SIGNED_LINK_VALIDITY_MS } from './limits';
import type { CallOptions } from './routes';
import { openScope } from './scope';
import { Failures } from './failures';
import { headerValue } from './receive';
import { send } from './send';

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
