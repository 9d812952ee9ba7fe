/**
 * Whose account, when the key changed before the state read any publication (Start From "now" on
 * an account that had none): there is no publication to ask the API about, and the API has no
 * "who am I". What the state knows of the old account is that a poll with the old key found it
 * without publications at `emptyAt`. The new key's publications (one list page) tell:
 *
 * - none: keeping the state and starting afresh are the same state, so the key is adopted;
 * - one published before `emptyAt - CLOCK_MARGIN_MS`: the old key would have listed it, so the key
 *   is another account's;
 * - all published later: same account or an account that began publishing since, and nothing the
 *   API answers tells which. The state is kept: the old account's publications since `emptyAt` are
 *   then delivered, never skipped; were it another account, its publications since then are
 *   delivered as well (docs/polling.md says so).
 */
import { rule } from '../shared/codes';
import { errorFacts } from '../shared/errors';
import { PAGE_LIMIT, isSafeId } from '../shared/publications';
import { type Poll, listPage } from './read';
import { type CursorState, isPlainObject } from './state';

/** What the judgement reads of a listed record (a server may omit or garble `published_at`). */
type Dated = { id: number; published_at?: unknown };

/**
 * How much earlier than `emptyAt` a publication of the old account may be dated and still have been
 * invisible then: n8n's clock ahead of the server's, and a publication committing late.
 */
export const CLOCK_MARGIN_MS = 10 * 60_000;

export type EmptyVerdict =
	/** The new key's account has no publication either. */
	| { verdict: 'none' }
	/** Another account: it had a publication the old key would have listed. */
	| { verdict: 'other'; reason: string }
	/** Undecidable: its publications are all from after the old account was seen empty. */
	| { verdict: 'since'; reason: string }
	/** The list did not answer. */
	| { verdict: 'unknown'; reason: string };

const when = (ms: number) => new Date(ms).toISOString();

/** Judges the new key's account against a state without a witness, seen empty at `emptyAt`. */
export async function judgeWithoutWitness(
	poll: Poll,
	state: CursorState,
	emptyAt: number,
): Promise<EmptyVerdict> {
	const page = await listPage(poll, state.start, PAGE_LIMIT).catch((error: unknown) => {
		if (rule(errorFacts(error).code).stopped === true) throw error; // a Stop is no answer
		return `its publication list could not be read: ${errorFacts(error).reason}`;
	});
	if (typeof page === 'string') return { verdict: 'unknown', reason: page };
	const records = (page.items as unknown[])
		.filter(
			(item): item is Dated => isPlainObject(item) && isSafeId(item.id) && item.id > state.start,
		)
		.sort((a, b) => a.id - b.id);
	if (records.length === 0) return { verdict: 'none' };
	const empty = `this trigger last found its account without publications at ${when(emptyAt)}`;
	const before = records.find(
		(item) =>
			typeof item.published_at === 'number' && item.published_at < emptyAt - CLOCK_MARGIN_MS,
	);
	if (before) {
		const at = when(before.published_at as number);
		return {
			verdict: 'other',
			reason: `its publication ${before.id} dates from ${at}, and ${empty}`,
		};
	}
	const first = records[0];
	return {
		verdict: 'since',
		reason: `its publications (the first: ${first.id}) all date from after ${when(emptyAt - CLOCK_MARGIN_MS)}, and ${empty}`,
	};
}
