/**
 * Whose history a stored cursor is. Publication ids are one sequence for all accounts, so a cursor
 * read with one account's key means nothing for another account: carried over, it would skip every
 * publication of the new account below it. The state names the key it was read with (a fingerprint,
 * never the key) and a publication it read (the witness). When the credential's key is not that key,
 * the API is asked whether the witness belongs to the new key's account (transport's proveOwnership:
 * its detail answers 200 for the same account, 404 for another):
 *
 * - same account (a new key of it, whatever its other scopes): the cursor goes on, nothing twice;
 * - another account, or nothing to ask about (the state never read a publication): the trigger
 *   starts afresh as Start From says, and says so in n8n's log;
 * - no answer that proves either (401, 403, 429, 5xx, the poll's time): the poll fails, nothing is
 *   delivered or skipped, and the next poll asks again.
 *
 * Nothing here is stored until a poll delivers (n8n saves static data only then), so a poll repeated
 * after a restart asks again and comes to the same decision. A state saved before fingerprints is
 * adopted by the key that meets it, as if nothing had changed.
 */
import type { IPollFunctions } from 'n8n-workflow';

import { imagePackError } from '../shared/errors';
import { proveOwnership } from '../transport';
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
export async function bindToAccount(poll: Poll, stored: CursorState): Promise<AccountDecision> {
	const { ctx, connection, times } = poll;
	const fp = connection.fingerprint;
	if (stored.fp === fp) return { keep: stored };
	if (stored.fp === undefined) return { keep: { ...stored, fp } }; // saved before fingerprints
	const witness = stored.witness;
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
	throw imagePackError(
		ctx.getNode(),
		{ code: 'account_unconfirmed', charge: 'not_charged' },
		{
			message:
				'The API key of the Image Pack API credential changed, and the trigger could not confirm that it belongs to the same account',
			description: `${reason}. The trigger asks whether a publication it read with the old key belongs to the new key's account, to go on where it was (same account) or start afresh as Start From says (another account). Nothing was delivered and nothing was skipped: the next poll asks again. The new key needs the documents:read scope.`,
			secret: connection.apiKey,
		},
	);
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
