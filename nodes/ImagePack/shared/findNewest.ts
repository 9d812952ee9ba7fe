/**
 * Finding the newest publication with `since_id` probes, as a pure module (no n8n, no HTTP): the
 * trigger's Fetch Test Event and first "now" activation, and the publication picker's first page.
 */
import type { PublicationRecord } from './cursor';
import { isSafeId } from './cursorState';

/** Why a newest-id search stopped without an answer (a broken server, or the poll's time is up). */
export class NewestSearchError extends Error {}

/** Requests a newest-id search may make: 1 + 54 doublings + 54 halvings, then it is a server fault. */
export const MAX_SEARCH_PROBES = 110;

/**
 * Finds the newest record using `since_id` probes with `limit=1`: an exponential phase finds an
 * empty probe, a binary phase narrows down. `probe(since)` answers the first record above `since`,
 * or null. About 2 * log2(newest id) requests, never more than MAX_SEARCH_PROBES; every probe must
 * answer an id above the since_id it was asked with (else the server ignores since_id and the search
 * could never end), and the search stops once `expired()` says the poll's time is up. Every stop
 * goes through `fail` (default: throw a NewestSearchError).
 */
export async function findNewest(
	probe: (since: number) => Promise<PublicationRecord | null>,
	expired: () => boolean = () => false,
	fail: (message: string) => never = (message) => {
		throw new NewestSearchError(message);
	},
): Promise<PublicationRecord | null> {
	let probes = 0;
	const ask = async (since: number): Promise<PublicationRecord | null> => {
		if (++probes > MAX_SEARCH_PROBES) {
			fail(
				`The search for the newest publication did not end after ${MAX_SEARCH_PROBES} requests (last since_id=${since}): the server's answers contradict each other. This is a fault of the server, not of this node's settings.`,
			);
		}
		if (probes > 1 && expired()) {
			fail(
				`The search for the newest publication ran out of the poll's time after ${probes - 1} requests (the server answers too slowly).`,
			);
		}
		const found = await probe(since);
		if (found !== null && !(isSafeId(found.id) && found.id > since)) {
			fail(
				`The server answered since_id=${since} with publication id ${JSON.stringify(found.id)}, which is not a whole number above it (ids are at most 2^53 - 1): it ignores since_id. This is a fault of the server, not of this node's settings.`,
			);
		}
		return found;
	};
	let newest = await ask(0);
	if (!newest) return null;
	let lo = newest.id; // a record with this id exists
	let hi: number | undefined; // no record above this id (when last asked)
	let step = Math.max(1, lo);
	while (hi === undefined) {
		const since = Math.min(lo + step, Number.MAX_SAFE_INTEGER); // an id above it is a fault
		const found = await ask(since);
		if (found) {
			newest = found;
			lo = found.id;
			step *= 2;
		} else {
			hi = since;
		}
	}
	while (lo < hi) {
		const mid = Math.floor((lo + hi) / 2);
		const found = await ask(mid);
		if (found) {
			newest = found;
			lo = found.id;
			if (lo > hi) hi = lo;
		} else {
			hi = mid;
		}
	}
	return newest;
}
