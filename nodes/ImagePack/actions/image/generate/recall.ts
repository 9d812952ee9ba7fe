/**
 * Recall, the first step of an item's sequence (execute.ts): the execution's memory of this node
 * (stores.ts `RunMemory`, in n8n's context data) and, once per node run, each item's identity
 * (identity.ts) with the record the memory holds for it, if it is this item's.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import type { Connection } from '../../../transport';
import { contextData, isToolExecution } from '../../tool';
import { type Ask, askOf, digestOf, identify, nodeName, occurrences, runName } from './identity';
import type { ItemPlan } from './plan';
import { type Memo, RunMemory } from './stores';

/**
 * The run index n8n gives this run of the node: one per run of a node in a loop, one per tool call
 * of an agent, the same for every Retry On Fail try and for a retried execution's rerun of the
 * failed run.
 */
function runIndexOf(ctx: IExecuteFunctions): number {
	try {
		const value: unknown = ctx.getWorkflowDataProxy(0).$runIndex;
		if (typeof value === 'number') return value;
	} catch {
		// Fall through to the context's own field (n8n-core's contexts have had it since 1.x).
	}
	const field = (ctx as { runIndex?: unknown }).runIndex;
	return typeof field === 'number' ? field : 0;
}

/**
 * The records of this run, in the node's execution context data: n8n saves it with the execution
 * and copies it into a retry of it (*Executions → Retry*), and nowhere else.
 */
export function openMemory(ctx: IExecuteFunctions, asTool: boolean): RunMemory {
	// AI Agent 2.x runs a tool call in its own context (isToolExecution) and tries it again only when
	// it throws, under a new run index; as a tool this node never throws (router.ts). Each call is
	// its own generation there, so nothing is kept.
	if (isToolExecution(ctx)) return new RunMemory({}, 0, '');
	const store = contextData(ctx, 'node');
	const memory = new RunMemory(store, runIndexOf(ctx), String(ctx.getExecutionId?.() ?? ''));
	if (!asTool) memory.forgetEarlierRuns();
	return memory;
}

/** What an item asks: its request and language, an AI Agent 3.x call's id, the user's key. */
function askedIn(ctx: IExecuteFunctions, itemIndex: number, plan: ItemPlan): Ask {
	const toolCallId: unknown = ctx.getInputData()[itemIndex]?.json?.toolCallId;
	return {
		body: plan.request.body,
		language: plan.options.acceptLanguage,
		call: typeof toolCallId === 'string' ? toolCallId : '',
		idempotencyKey: plan.options.idempotencyKey,
	};
}

/**
 * The memory's record of the item, if it is this item's: within one execution the workflow cannot
 * change, so a request that moved between Retry On Fail's tries ($now, a random value) is the same
 * item unless an agent's call id says otherwise; across executions the request must be the same.
 */
function recognised(memo: Memo | undefined, ask: Ask, digest: string, executionId: string) {
	if (!memo) return undefined;
	const same =
		memo.executionId === executionId ? (memo.call ?? '') === ask.call : memo.digest === digest;
	return same ? memo : undefined;
}

/** Each item's identity and recognised record, made once for the node run (identity.ts). */
export function identities(
	ctx: IExecuteFunctions,
	memory: RunMemory,
	plans: Array<ItemPlan | Error>,
	connections: Array<Connection | undefined>,
) {
	const node = nodeName(ctx);
	const name = runName(ctx);
	// Who asks is each item's own account (its credential may resolve per item).
	const placeOf = (itemIndex: number) => ({
		node,
		run: name,
		fingerprint: connections[itemIndex]!.fingerprint,
	});
	const asks = plans.map((plan, itemIndex) =>
		plan instanceof Error ? undefined : askedIn(ctx, itemIndex, plan),
	);
	const memos = asks.map((ask, itemIndex) => {
		if (!ask) return undefined;
		return recognised(memory.recall(itemIndex), ask, digestOf(ask), memory.executionId);
	});
	const digests = asks.map((ask, index) => ask && (memos[index]?.digest ?? digestOf(ask)));
	// Counted per account: two sellers' identical rows never share an occurrence.
	const perAccount = digests.map(
		(digest, index) => digest && askOf(digest, connections[index]!.fingerprint),
	);
	const calls = asks
		.map((ask) => ask?.call ?? '')
		.join(' ')
		.trim();
	const before = memory.askedBefore(calls);
	const counted = occurrences(
		perAccount,
		memos.map((memo) => memo?.occurrence),
		before,
	);
	memory.asked(before, counted.after, calls);
	return asks.map((ask, index) =>
		ask
			? {
					identity: identify(placeOf(index), ask, digests[index]!, counted.occurrence[index]),
					memo: memos[index],
				}
			: undefined,
	);
}
