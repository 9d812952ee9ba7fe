/**
 * Recall, the first step of an item's sequence (execute.ts): the execution's memory of this node
 * (stores.ts `RunMemory`, in n8n's context data) and, once per node run, each item's identity
 * (identity.ts) with the record the memory holds for it, if it is this item's.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import type { Connection } from '../../../transport';
import { contextData, isToolExecution } from '../../tool';
import {
	type Ask,
	digestOf,
	identify,
	nodeName,
	occurrences,
	requestDigest,
	runName,
} from './identity';
import type { ItemPlan } from './plan';
import { askOf } from './ledger';
import { type Memo, RunMemory, agentCalls, nextCall } from './stores';

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
 * Before n8n 2.14 (no resume token) a retry is a new execution whose only value shared with the run
 * it retries is the trigger's items, which n8n copies into it (docs/old-n8n-facts.md): a digest of
 * the JSON of each trigger upstream (a node with no parents), as its last run gave them. Unique for a
 * schedule (a timestamp in milliseconds) or a form; shared by identical manual runs and webhook calls.
 */
function triggerRun(ctx: IExecuteFunctions): string {
	const triggers: unknown[] = [];
	try {
		const proxy = ctx.getWorkflowDataProxy(0);
		for (const { name } of ctx.getParentNodes(ctx.getNode().name)) {
			if (ctx.getParentNodes(name).length) continue;
			const node = proxy.$(name) as { isExecuted: boolean; all: () => Array<{ json: unknown }> };
			triggers.push([name, node.isExecuted ? node.all().map((item) => item.json) : null]);
		}
	} catch {
		// A trigger whose items cannot be read: named by what could be read.
	}
	return `trigger ${requestDigest(triggers)}`;
}

/**
 * Whether this execution retries a run n8n stopped while this node ran (before n8n 2.14, where
 * nothing else tells it from new work): decided at the node's first run in the execution, kept for
 * its later runs (a loop's batches). A retry (`retry` mode) of a run in which the node had started
 * (n8n's crash recovery leaves the node in the run data), whose context data does not hold that
 * run's start: n8n saves it when an execution fails, never in the middle of a node's run. A retry
 * of a retry that was cut off is cut off too (it shares the trigger's items with the stopped run).
 * A new execution, and a retry of a run that failed, are never cut off.
 */
export function cutOff(ctx: IExecuteFunctions, memory: RunMemory): boolean {
	const { started, runIndex, executionId } = memory;
	const retry = ctx.getMode() === 'retry';
	const decided =
		started?.execution === executionId
			? started.cutOff
			: retry && started?.cutOff
				? true
				: undefined;
	let cut = decided ?? false;
	if (decided === undefined && retry) {
		try {
			const self = ctx.getWorkflowDataProxy(0).$(ctx.getNode().name) as { isExecuted?: boolean };
			cut = self.isExecuted === true && started?.run !== runIndex;
		} catch {
			cut = true; // cannot tell: the safe side
		}
	}
	const again = started?.execution === executionId && started.run === runIndex;
	const tries = again ? (started.tries ?? 1) + 1 : 1;
	memory.started = { execution: executionId, run: runIndex, cutOff: cut, tries };
	return cut;
}

/**
 * Whether n8n runs the node again and drops this output: Retry On Fail has a try left, and the first
 * item is an error item (n8n-core's WorkflowExecute does so under either Continue setting).
 */
export function triedAgain(
	ctx: IExecuteFunctions,
	memory: RunMemory,
	output: INodeExecutionData[],
): boolean {
	const { retryOnFail, maxTries } = ctx.getNode();
	if (!retryOnFail || output[0]?.json?.error === undefined) return false;
	const tries = Math.min(5, Math.max(2, maxTries || 3));
	return (memory.started?.tries ?? 1) < tries;
}

/**
 * The records of this run, in the node's execution context data: n8n saves it with the execution
 * and copies it into a retry of it (*Executions → Retry*), and nowhere else.
 */
export function openMemory(ctx: IExecuteFunctions, asTool: boolean): RunMemory {
	const executionId = String(ctx.getExecutionId?.() ?? '');
	// AI Agent 2.x runs each call in a context of its own, whose data n8n keeps nowhere: the
	// execution's calls are counted in this process instead, each call a run of its own (a repeat
	// is a new generation unless an earlier one may have been charged). A retry after n8n stopped
	// counts afresh in a new process, so its calls find what the stopped attempt sent.
	if (isToolExecution(ctx)) return new RunMemory(agentCalls(executionId), nextCall(), executionId);
	const store = contextData(ctx, 'node');
	const memory = new RunMemory(store, runIndexOf(ctx), executionId);
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
	const trigger = name.startsWith('token ') ? undefined : (memory.trigger ??= triggerRun(ctx));
	// Who asks is each item's own account (its credential may resolve per item).
	const placeOf = (itemIndex: number) => ({
		node,
		run: name,
		trigger,
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
