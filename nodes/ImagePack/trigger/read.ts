/**
 * The trigger's requests, each bounded by the poll's deadline: list pages, the newest-publication
 * search and manifests, with the bounds one poll's delivery must keep.
 */
import type { IDataObject, IPollFunctions } from 'n8n-workflow';

import { rule } from '../shared/codes';
import { errorFacts, imagePackError } from '../shared/errors';
import {
	PAGE_LIMIT,
	findNewest,
	type ListPage,
	type PublicationRecord,
} from '../shared/publications';
import { type Connection, PUBLICATIONS_PATH, getPublication, listPublications } from '../transport';
import type { PollTimes } from './pacing';

/** What every request of one poll needs: its context, the connection and the poll's times. */
export interface Poll {
	ctx: IPollFunctions;
	connection: Connection;
	times: PollTimes;
}

/** Detail requests in flight at once when attaching manifests. */
export const MANIFEST_CONCURRENCY = 4;
/**
 * The most JSON one poll delivers (records and manifests, in characters), whatever Max
 * Publications per Poll says: n8n holds a poll's items in memory and serialises them several times,
 * so a few large manifests must not make an execution no small n8n can hold. One publication is
 * delivered however large.
 */
export const MAX_POLL_CHARS = 4 * 1024 * 1024;

/**
 * Whether a failed request was cut short by the poll's time (its timeout, or a Retry-After longer
 * than the poll has left): the poll then delivers what it completed.
 */
export function isCut(error: unknown): boolean {
	return rule(errorFacts(error).code).endsPoll === true;
}

export async function listPage(
	{ ctx, connection, times }: Poll,
	since: number,
	limit = PAGE_LIMIT,
): Promise<ListPage> {
	const query = { sinceId: since, limit };
	const { body } = await listPublications(ctx, connection, query, { deadline: times.deadline });
	if (typeof body !== 'object' || body === null || !Array.isArray(body.items)) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'server_fault', charge: 'not_charged' },
			{
				message: 'The publication list answer has no items array',
				description: `GET ${PUBLICATIONS_PATH}?since_id=${since}&limit=${limit} answered: ${JSON.stringify(body).slice(0, 200)}`,
				secret: connection.apiKey,
			},
		);
	}
	return body;
}

/** The newest publication (O(log max id) requests) and the overlap the answers announced. */
export async function newestPublication(poll: Poll) {
	const { ctx, times } = poll;
	let overlap: unknown;
	const newest = await findNewest(
		async (since) => {
			const page = await listPage(poll, since, 1);
			overlap = page.reread_overlap ?? overlap;
			return page.items[0] ?? null;
		},
		() => Date.now() > times.stopAt,
		(message) => {
			throw imagePackError(
				ctx.getNode(),
				{ code: 'server_fault', charge: 'not_charged' },
				{
					message,
					description: `While searching the newest publication with GET ${PUBLICATIONS_PATH}?since_id=…&limit=1`,
				},
			);
		},
	);
	return { newest, overlap };
}

/**
 * Fetches the details of `records` in order, MANIFEST_CONCURRENCY at once, appending them to
 * `details` while the poll's bound allows (`chars`: what the items so far take). Stops starting new
 * ones once the poll's time is up (after at least one batch per poll), and keeps only the prefix
 * within MAX_POLL_CHARS (at least one), so `details` is always a complete prefix. Returns whether
 * the bound was reached; a failed request throws (the caller decides what a cut request means),
 * after the details answered before it in the same batch were appended.
 */
export async function fetchManifests(
	{ ctx, connection, times }: Poll,
	records: PublicationRecord[],
	details: IDataObject[],
	chars: { used: number },
): Promise<boolean> {
	const { deadline } = times;
	for (let at = 0; at < records.length; at += MANIFEST_CONCURRENCY) {
		if (details.length > 0 && Date.now() > times.stopAt) return false;
		const batch = records.slice(at, at + MANIFEST_CONCURRENCY);
		const fetched = await Promise.allSettled(
			batch.map(async ({ id }) => (await getPublication(ctx, connection, id, { deadline })).body),
		);
		for (const [index, result] of fetched.entries()) {
			// The batch's complete prefix is kept: a cut request ends the poll after what came before it.
			if (result.status === 'rejected') throw result.reason;
			const detail = result.value;
			const size =
				JSON.stringify(batch[index]).length + JSON.stringify(detail.manifest ?? null).length;
			if (details.length > 0 && chars.used + size > MAX_POLL_CHARS) return true;
			chars.used += size;
			details.push(detail);
		}
	}
	return false;
}
