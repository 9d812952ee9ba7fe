/**
 * An item's claims in the durable record (durable.ts), between the verdict's asks (verdict.ts) and
 * the send: what a claim records for the item (identity.ts values), what it found recorded before,
 * and the mark a resend after a stop claims apart. execute.ts's item sequence asks for them.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { imagePackError } from '../../../shared/errors';
import type { ClaimValues, Claimed, DurableRecord } from './durable';
import { type ItemIdentity, STOPPED, againValue, toolWindows } from './identity';
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
 * a send again; the Idempotency Key with its open mark, and Clear's mark of the key for this run.
 */
function claimValues(
	{ identity, memo, plan, record }: ClaimItem,
	claim: Claim,
	executionId: string,
) {
	const again = claim === 'again' ? againValue(identity, memo!.executionId) : undefined;
	const clearing = plan.options.clearIdempotencyKey ? [identity.keyCleared] : [];
	// With Resend Uncertain Generations: the key claimed by this execution, so that of two rows with
	// one key the second is not sent, a resend or not (verdict.ts `keyResent`).
	if (plan.options.resendUncertain && identity.key) {
		clearing.push(`resend ${executionId} ${identity.key}`);
	}
	// A send again is also the run's send: a retry of the stopped execution it descends from (which
	// shares the run) finds it and does not pay for it again.
	const sending = record === 'run';
	return {
		send: sending ? identity.send : undefined,
		witness: sending ? identity.witness : undefined,
		again,
		windows: claim !== 'again' && record === 'tool' ? toolWindows(identity, Date.now()) : [],
		key: identity.key ? [identity.key, identity.keyOpen, ...clearing] : [],
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
	const { send, witness, again, windows, key } = claimValues(item, claim, run.memory.executionId);
	// A retry's one read of the sends' row already says this left: reported with no store call.
	if (claim === 'fresh' && !item.plan.options.resendUncertain && readAsSent(run, item)) {
		return [undefined, { sent: true, again: false, key: false }];
	}
	const sends = [send, again].filter((value): value is string => value !== undefined);
	const shared = witness ? [witness] : [];
	const claimed = await write(run, item, { sends, shared, key, windows });
	const found = (value?: string) => value !== undefined && claimed.found.has(value);
	const { identity } = item;
	const recorded: Recorded = {
		sent: found(send) || windows.some(found),
		witness: found(witness),
		again: found(again),
		key: found(identity.key || undefined),
		keyOpen: found(identity.keyOpen || undefined),
		keyCleared: found(identity.keyCleared || undefined),
		keyResent: found(key.find((value) => value.startsWith('resend '))),
	};
	return [claimed, recorded];
}

/**
 * Resending what an attempt n8n did not finish sent (it saved no record to name): a second claim,
 * `again stopped <send>`, made only for such a resend, so that of two retries of one stopped
 * execution with Resend Uncertain Generations only the first resends it. Says whether it was there.
 */
export async function markResend(run: ClaimRun, item: ClaimItem): Promise<[Claimed, boolean]> {
	const mark = againValue(item.identity, STOPPED);
	const claimed = await write(run, item, { sends: [mark], windows: [] });
	return [claimed, claimed.found.has(mark)];
}

/** Two claims of one item settle together. */
export function both(first: Claimed | undefined, second: Claimed): Claimed {
	if (!first) return second;
	return {
		found: new Set([...first.found, ...second.found]),
		settle: async (outcome) => {
			await first.settle(outcome);
			await second.settle(outcome);
		},
		answered: async () => {
			await first.answered();
			await second.answered();
		},
	};
}
