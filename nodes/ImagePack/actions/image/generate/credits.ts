/**
 * May this generation spend its estimate? Every generation that is sent takes a reservation here
 * first (`reserveCredits`) and settles it with what the service charged; an answer replayed from an
 * earlier try or collected from a held generation (held.ts) costs nothing and reserves nothing.
 * Max Credits per Item needs no reservation: it is checked against the item's estimate while the
 * item is planned, before anything is sent (request.ts).
 *
 * - Max Credits per Execution: what every Image Pack node and tool call of one execution spent or
 *   reserved, kept in the execution's flow context data, so it follows the execution (a resumed one
 *   too) and is never shared between executions.
 * - Max Credits per Hour: what one node spent or reserved in the last hour (a sliding window), across
 *   its executions and tool calls in this n8n process (a queue-mode worker counts its own; a restart
 *   starts from zero). Module-level on purpose: it must outlive one execution. Bounded: spends older
 *   than an hour are dropped, and at most `maxNodes` nodes are tracked (the least recently used goes).
 *
 * A reservation is taken synchronously before sending, so parallel items and tool calls cannot
 * overshoot a cap together.
 */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { imagePackError } from '../../../shared/errors';
import { contextData } from '../../tool';
import { nodeName } from './identity';

export const HOUR_MS = 60 * 60_000;

export interface Spend {
	at: number;
	credits: number;
}

export type Reservation =
	| { ok: true; spend: Spend }
	| { ok: false; spent: number; freesInMs: number };

/** The hour's cap of every node, over a sliding hour. Pure: no n8n, no timers. */
export class HourlyCaps {
	private readonly nodes = new Map<string, Spend[]>();

	constructor(
		private readonly now = () => Date.now(),
		private readonly maxNodes = 1000,
	) {}

	/** The spends of the last hour under `node` (a workflow's node), oldest first. */
	private recent(node: string): Spend[] {
		const since = this.now() - HOUR_MS;
		const spends = (this.nodes.get(node) ?? []).filter(
			(spend) => spend.at > since && spend.credits > 0,
		);
		this.nodes.delete(node); // re-inserted last: the Map's order is the least recently used first
		this.nodes.set(node, spends);
		while (this.nodes.size > this.maxNodes) this.nodes.delete(this.nodes.keys().next().value!);
		return spends;
	}

	/** Reserves `estimate` under a cap (> 0), or says what was spent and when credits free up. */
	reserve(node: string, estimate: number, cap: number): Reservation {
		const spends = this.recent(node);
		const spent = spends.reduce((sum, spend) => sum + spend.credits, 0);
		if (spent + estimate > cap) {
			let freed = spent;
			const next = spends.find((spend) => (freed -= spend.credits) + estimate <= cap);
			const freesInMs = next ? Math.max(0, next.at + HOUR_MS - this.now()) : HOUR_MS;
			return { ok: false, spent, freesInMs };
		}
		const spend = { at: this.now(), credits: estimate };
		spends.push(spend);
		return { ok: true, spend };
	}

	/** Counts what may have been spent, whatever the cap (an earlier attempt's send). */
	add(node: string, credits: number): void {
		this.recent(node).push({ at: this.now(), credits });
	}

	/** Replaces a reservation by what was charged (0 when nothing was). */
	settle(spend: Spend, charged: number): void {
		spend.credits = Math.max(0, charged);
	}
}

/** Key in the execution's flow context: credits spent or reserved by every Image Pack node of the run. */
const LEDGER_KEY = 'imagePackCreditsSpent';

/** The execution's cap, over its flow context data (outside an execution: this node run's own). */
export class ExecutionLedger {
	constructor(private readonly context: IDataObject) {}

	get spent(): number {
		const value = Number(this.context[LEDGER_KEY] ?? 0);
		return Number.isFinite(value) ? value : 0;
	}

	/** Reserves `estimate` credits; false, reserving nothing, when the cap (> 0) would be passed. */
	reserve(estimate: number, cap: number): boolean {
		if (cap > 0 && this.spent + estimate > cap) return false;
		this.context[LEDGER_KEY] = this.spent + estimate;
		return true;
	}

	/** Counts what may have been spent, whatever the cap (an earlier attempt's send). */
	add(credits: number): void {
		this.context[LEDGER_KEY] = this.spent + credits;
	}

	/** Replaces a reservation by what was actually charged (0 when the service charged nothing). */
	settle(estimate: number, charged: number): void {
		this.context[LEDGER_KEY] = Math.max(0, this.spent - estimate + charged);
	}
}

const hourly = new HourlyCaps();

function capReached(ctx: IExecuteFunctions, itemIndex: number, message: string, raise: string) {
	return imagePackError(
		ctx.getNode(),
		{ code: 'credit_cap_reached', charge: 'not_sent', itemIndex },
		{ message, description: `Nothing was sent and no credits were used. ${raise}` },
	);
}

/**
 * Reserves `estimate` under the hour's cap, then the execution's; a cap that would be passed throws
 * `credit_cap_reached` with nothing reserved. Returns how to settle: with what was charged.
 */
export function reserveCredits(
	ctx: IExecuteFunctions,
	itemIndex: number,
	estimate: number,
	{
		maxCreditsPerExecution,
		maxCreditsPerHour,
	}: Record<'maxCreditsPerExecution' | 'maxCreditsPerHour', number>,
): (charged: number) => void {
	let settleHour: (charged: number) => void = () => {};
	if (maxCreditsPerHour > 0) {
		const node = nodeName(ctx);
		if (estimate > maxCreditsPerHour) {
			throw capReached(
				ctx,
				itemIndex,
				`This request alone could cost ${estimate} credits, more than Max Credits per Hour (${maxCreditsPerHour}): it can never fit`,
				'Raise Max Credits per Hour above the request’s estimate, or ask for fewer images, a lower resolution or a cheaper model.',
			);
		}
		const reservation = hourly.reserve(node, estimate, maxCreditsPerHour);
		if (!reservation.ok) {
			const minutes = Math.ceil(reservation.freesInMs / 60_000);
			throw capReached(
				ctx,
				itemIndex,
				`The hourly credit cap of this node is reached: ${reservation.spent} of ${maxCreditsPerHour} credits (Max Credits per Hour) were spent or reserved in the last hour by this node in this n8n process, and this request could cost ${estimate} more; enough credits free up in about ${minutes} min`,
				'Raise Max Credits per Hour to allow more.',
			);
		}
		settleHour = (charged) => hourly.settle(reservation.spend, charged);
	}
	const ledger = new ExecutionLedger(contextData(ctx, 'flow'));
	const cap = maxCreditsPerExecution;
	if (cap > 0 && estimate > cap) {
		settleHour(0);
		throw capReached(
			ctx,
			itemIndex,
			`This request alone could cost ${estimate} credits, more than Max Credits per Execution (${cap}): it can never fit`,
			'Raise Max Credits per Execution above the request’s estimate, or ask for fewer images, a lower resolution or a cheaper model.',
		);
	}
	if (!ledger.reserve(estimate, cap)) {
		settleHour(0);
		throw capReached(
			ctx,
			itemIndex,
			`The credit cap of this workflow run is reached: ${ledger.spent} of ${cap} credits (Max Credits per Execution) are already spent or reserved, and this request could cost ${estimate} more`,
			`Raise Max Credits per Execution (now ${cap}) to allow more.`,
		);
	}
	return (charged) => {
		ledger.settle(estimate, charged);
		settleHour(charged);
	};
}

/**
 * An item reported sent by another attempt (n8n stopped it, another retry of the same execution, the
 * key's other run): its charge is unknown and in no ledger this execution counts, so its estimate
 * counts under both caps: a cap holds across kills and retries.
 */
export function countUncertain(
	ctx: IExecuteFunctions,
	estimate: number,
	caps: Record<'maxCreditsPerExecution' | 'maxCreditsPerHour', number>,
): void {
	if (caps.maxCreditsPerHour > 0) hourly.add(nodeName(ctx), estimate);
	new ExecutionLedger(contextData(ctx, 'flow')).add(estimate);
}

/** The execution's cap as the item's output shows it, when one is set. */
export function creditBudget(ctx: IExecuteFunctions, cap: number): IDataObject | undefined {
	if (!(cap > 0)) return undefined;
	const { spent } = new ExecutionLedger(contextData(ctx, 'flow'));
	return { cap, spent, remaining: Math.max(0, cap - spent) };
}
