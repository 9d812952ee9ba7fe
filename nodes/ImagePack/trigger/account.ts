/**
 * Whose history a stored cursor is. Publication ids are one sequence for all accounts, so a cursor
 * read with one account's key means nothing for another account: carried over, it would skip every
 * publication of the new account below it. The state names the key it was read with (a fingerprint,
 * never the key) and a publication it read (the witness). When the credential's key is not that key,
 * the API is asked whether the witness belongs to the new key's account (transport's proveOwnership:
 * its detail answers 200 for the same account, 404 for another):
 *
 * - same account (a new key of it, whatever its other scopes): the cursor goes on, nothing twice;
 * - another account: the trigger starts afresh as Start From says, and says so in n8n's log;
 * - no answer that proves either (401, 403, 429, 5xx, the poll's time): the poll fails, nothing is
 *   delivered or skipped, and the next poll asks again.
 *
 * A state that never read a publication has no witness: with Start From "now" the new key's
 * publications are judged against when the old key last found the account empty (noWitness.ts);
 * otherwise starting afresh gives the very state it had.
 *
 * Nothing here is stored until a poll delivers (n8n saves static data only then), so a poll repeated
 * after a restart asks again and comes to the same decision. A state saved before fingerprints is
 * adopted by the key that meets it, as if nothing had changed.
 */
import type { IPollFunctions } from 'n8n-workflow';

import { imagePackError } from '../shared/errors';
import { type Connection, proveOwnership } from '../transport';
import { judgeWithoutWitness } from './noWitness';
import type { Poll } from './read';
import type { CursorState } from './state';

export type AccountDecision =
	/** The stored cursor goes on, adopted by the current key. */
	| { keep: CursorState }
	/** Start afresh: `other` when the API said so (`why`), else the state had nothing to ask about. */
	| { keep?: undefined; other: boolean; why: string };

/** How n8n's log names a trigger: its node and workflow. */
export function where(ctx: IPollFunctions): string {
	const workflow = ctx.getWorkflow();
	return `Image Pack Trigger "${ctx.getNode().name}" (workflow ${workflow.id ?? '?'})`;
}

/**
 * Decides whether `stored` is the history of the account behind the poll's key (see above). Throws
 * when the API gives no answer that proves it either way.
 */
export async function bindToAccount(
	poll: Poll,
	stored: CursorState,
	startFrom: string,
): Promise<AccountDecision> {
	const { ctx, connection, times } = poll;
	const fp = connection.fingerprint;
	if (stored.fp === fp) return { keep: stored };
	if (stored.fp === undefined) return { keep: { ...stored, fp } }; // saved before fingerprints
	const witness = stored.witness;
	if (witness === undefined && startFrom === 'now' && stored.emptyAt !== undefined) {
		return await bindWithoutWitness(poll, stored, stored.emptyAt);
	}
	if (witness === undefined) return { other: false, why: 'it had not read any publication yet' };
	const { verdict, reason } = await proveOwnership(
		ctx,
		connection,
		{ publicationId: witness },
		{ deadline: times.deadline },
	);
	if (verdict === 'same') {
		ctx.logger.info(
			`${where(ctx)}: the credential's API key changed; ${reason}, so the key belongs to the same account and the trigger goes on where it was`,
		);
		return { keep: { ...stored, fp } };
	}
	if (verdict === 'other') return { other: true, why: reason };
	throw unconfirmed(
		poll,
		`${reason}. The trigger asks whether a publication it read with the old key belongs to the new key's account, to go on where it was (same account) or start afresh as Start From says (another account).`,
	);
}

/** The poll's error when the API gave no answer about the new key's account. */
function unconfirmed(
	{ ctx, connection }: { ctx: IPollFunctions; connection: Connection },
	why: string,
) {
	return imagePackError(
		ctx.getNode(),
		{ code: 'account_unconfirmed', charge: 'not_charged' },
		{
			message:
				'The API key of the Image Pack API credential changed, and the trigger could not confirm that it belongs to the same account',
			description: `${why} Nothing was delivered and nothing was skipped: the next poll asks again. The new key needs the documents:read scope.`,
			secret: connection.apiKey,
		},
	);
}

/** The key changed before the state read any publication (Start From "now"): see noWitness.ts. */
async function bindWithoutWitness(
	poll: Poll,
	stored: CursorState,
	emptyAt: number,
): Promise<AccountDecision> {
	const { ctx, connection } = poll;
	const keep = { keep: { ...stored, fp: connection.fingerprint } };
	const judged = await judgeWithoutWitness(poll, stored, emptyAt);
	const changed = `${where(ctx)}: the credential's API key changed before the trigger read any publication`;
	switch (judged.verdict) {
		case 'none':
			ctx.logger.info(
				`${changed}; this key's account has none either, so the trigger goes on as it was (a publication from now on is delivered)`,
			);
			return keep;
		case 'other':
			return { other: true, why: judged.reason };
		case 'since':
			ctx.logger.warn(
				`${changed}, and no publication can prove whose account the new key is: ${judged.reason}. The trigger goes on as the same account, so none of them is lost: they are delivered. Were the key another account's, its publications since then are delivered as well.`,
			);
			return keep;
		default:
			throw unconfirmed(
				poll,
				`${judged.reason}. The trigger had not read any publication with the old key, so it reads the new key's publications to tell whether they could be the same account's (go on) or not (start afresh as Start From says).`,
			);
	}
}

/** The log line of a trigger that starts afresh because the key changed. */
export function logFreshStart(
	ctx: IPollFunctions,
	{ other, why }: { other: boolean; why: string },
	startFrom: string,
): void {
	const from =
		startFrom === 'now'
			? 'only publications from now on are delivered'
			: startFrom === 'id'
				? 'the publications after Start ID are delivered'
				: 'every publication of the account is delivered, oldest first';
	const fresh = `The trigger starts afresh as Start From says: ${from}.`;
	if (!other) {
		ctx.logger.info(`${where(ctx)}: the credential's API key changed and ${why}. ${fresh}`);
		return;
	}
	ctx.logger.warn(
		`${where(ctx)}: the credential's API key belongs to another account than the one this trigger read so far (${why}). ${fresh} The previous account's cursor is dropped: switching back to it starts afresh too.`,
	);
}
