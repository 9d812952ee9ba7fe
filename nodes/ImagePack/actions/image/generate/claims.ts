/**
 * An item's claims in the durable record (durable.ts), between the verdict's asks (verdict.ts) and
 * the send: what a claim records for the item (its ledger values, identity.ts), and what it found
 * recorded before. execute.ts's item sequence asks for them.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { imagePackError } from '../../../shared/errors';
import type { ClaimValues, Claimed, DurableRecord } from './durable';
import type { ItemIdentity } from './identity';
import { askOf, ledger } from './ledger';
import type { ItemPlan } from './plan';
import type { Memo, RunMemory } from './stores';
import type { Claim, Recorded } from './verdict';

/** What a claim needs of the node run (execute.ts `Run`). */
export interface ClaimRun {
	ctx: IExecuteFunctions;
	memory: RunMemory;
	durable: DurableRecord;
	/** Claims written by this run (a full record is reported only by a run that wrote to it). */
	claims: number;
	/**
	 * Before n8n 2.14: the execution retries a run n8n stopped in this node, so a send recorded
	 * under the trigger's items (identity.ts `witness`) counts as sent (recall.ts `cutOff`).
	 */
	cutOff: boolean;
	/**
	 * Keys this execution's memory holds as generated (returned again by their rows): a twin row
	 * that finds one open finds it used by this execution, not left open by another.
	 */
	paidKeys: Set<string>;
}

/** What a claim needs of the item (execute.ts `Item`). */
export interface ClaimItem {
	itemIndex: number;
	plan: ItemPlan;
	identity: ItemIdentity;
	memo?: Memo;
	/**
	 * How its send is recorded (verdict.ts `Facts`): as a send of the run (a retry of the execution
	 * finds it), or, for a call with no run to name (a held generation, AI Agent 2.x), in the
	 * call's windows.
	 */
	record: 'run' | 'tool';
}

/**
 * The values a claim records (durable.ts `ClaimValues`): the run's send, a tool call's windows, or
 * a send again; the Idempotency Key with its open mark.
 */
function claimValues({ identity, memo, record }: ClaimItem, claim: Claim) {
	// A send again is also the run's send: a retry of the stopped execution it descends from (which
	// shares the run) finds it and does not pay for it again.
	const sending = record === 'run';
	return {
		send: sending ? identity.send : undefined,
		witness: sending ? identity.witness : undefined,
		again: claim === 'again' ? ledger.again(memo!.executionId, identity.send) : undefined,
		windows:
			claim !== 'again' && record === 'tool'
				? ledger.tool(askOf(identity.digest, identity.fingerprint), Date.now())
				: [],
		key: identity.key ? [identity.key, identity.keyOpen] : [],
	};
}

/** Writes values of the item's before its send; nothing is sent unless they are written. */
async function write(run: ClaimRun, item: ClaimItem, values: ClaimValues): Promise<Claimed> {
	run.claims++;
	const claimed = await run.durable.claim(values);
	if (!('failed' in claimed)) return claimed;
	throw imagePackError(
		run.ctx.getNode(),
		{ code: 'record_failed', charge: 'not_sent', itemIndex: item.itemIndex },
		{
			message: `Not sent: the record that keeps this generation from being paid twice if n8n stops could not be written (${claimed.failed})`,
			description:
				"The node writes it to n8n's database before every generation; try again in a moment.",
		},
	);
}

/**
 * A retry's one read of the sends' row (durable.ts `open`) found the item's send (before n8n 2.14,
 * for a cut-off retry, its send under the trigger's items): it left before the stop.
 */
export function readAsSent(run: ClaimRun, { identity, record }: ClaimItem): boolean {
	if (record !== 'run') return false;
	return [identity.send, run.cutOff ? identity.witness : undefined].some(
		(value) => value !== undefined && run.durable.sentBefore(value),
	);
}

/** Writes the item's claim, and says what was recorded before it; nothing is sent without it. */
export async function claimSend(
	run: ClaimRun,
	item: ClaimItem,
	claim: Claim,
): Promise<[Claimed?, Recorded?]> {
	const { send, witness, again, windows, key } = claimValues(item, claim);
	// A retry's one read of the sends' row already says this left: reported with no store call.
	if (claim === 'fresh' && readAsSent(run, item)) {
		return [undefined, { sent: true, again: false, key: 'unused' }];
	}
	const sends = [send, again].filter((value): value is string => value !== undefined);
	const shared = witness ? [witness] : [];
	const claimed = await write(run, item, { sends, shared, key, windows });
	// A twin row: the key is used only if its twin's send was not refused; else claim anew.
	const twin = await claimed.twinOf;
	if (twin === 'refused' || twin === 'not sent') {
		await claimed.settle('not sent');
		return await claimSend(run, item, claim);
	}
	const found = (value?: string) => !!value && claimed.found.has(value);
	const { identity } = item;
	const recorded: Recorded = {
		sent: found(send) || windows.some(found) || (run.cutOff && found(witness)),
		again: found(again),
		key: !found(identity.key)
			? 'unused'
			: found(identity.keyOpen) && !run.paidKeys.has(identity.key)
				? 'open'
				: 'used',
	};
	return [claimed, recorded];
}
