/**
 * Image links: for each generated image, the file endpoint's signed link, which opens the image
 * without the API key for about an hour. An AI agent's chat user sees only the text the model writes
 * (n8n drops a tool's binaries), and a Slack message or an e-mail needs a link rather than a file, so
 * the node hands out links: always as a tool, with the Image Links option otherwise. Nothing is
 * downloaded for them.
 *
 * The links sit next to the API's answer (`image_links`, in the order of `images`), which stays as
 * returned. The generation is paid for by then: a link that cannot be made is reported on its entry,
 * never thrown.
 */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import { errorFacts } from '../../../shared/errors';
import { type Connection, signedFileLink } from '../../../transport';
import type { GeneratedImage } from './answer';

/** One entry of `image_links`: the link and until when it works, or why there is none. */
export interface ImageLink extends IDataObject {
	id: string | null;
	url: string | null;
	expires_at?: string;
	error?: string;
}

/** Why an image has no link, in words a model or a person can act on. */
function missingLinkText(error: unknown): string {
	const facts = errorFacts(error);
	const details = [
		facts.code && `code ${facts.code}`,
		facts.httpStatus && `HTTP ${facts.httpStatus}`,
		facts.requestId && `request id ${facts.requestId}`,
	].filter(Boolean);
	const reason = facts.reason.replace(/\.?\s*$/, '');
	return `No link: ${reason}${details.length ? ` (${details.join(', ')})` : ''}. The image was generated and charged; only its link is missing.`;
}

/**
 * Adds `image_links` to `result` (one entry per image, in order), and an execution hint when some
 * could not be made. One request per image, one after the other; after an error that holds for the
 * whole key (scope, revoked key, Stop) the remaining images get the same answer without a request.
 */
export async function addImageLinks(
	ctx: IExecuteFunctions,
	connection: Connection,
	itemIndex: number,
	images: GeneratedImage[],
	result: IDataObject,
): Promise<void> {
	if (!images.length) return;
	const links: ImageLink[] = [];
	let stopped: string | undefined;
	for (const image of images) {
		const id = typeof image.id === 'string' ? image.id : null;
		if (stopped) {
			links.push({ id, url: null, error: stopped });
			continue;
		}
		try {
			const { url, expiresAt } = await signedFileLink(ctx, connection, image.url, { itemIndex });
			links.push({ id, url, expires_at: expiresAt });
		} catch (error) {
			const text = missingLinkText(error);
			links.push({ id, url: null, error: text });
			if (rule(errorFacts(error).code).keyWide) stopped = text;
		}
	}
	result.image_links = links;
	const missing = links.filter((link) => link.url === null);
	if (missing.length && typeof ctx.addExecutionHints === 'function') {
		ctx.addExecutionHints({
			message: `Item ${itemIndex}: ${missing.length} of ${links.length} image links could not be made. ${missing[0].error}`,
			location: 'outputPane',
		});
	}
}
