/**
 * Was this generation paid for already? Before an item is sent, what an earlier send of the same
 * request came to is looked up in one of two places, each with its own lifetime (stores.ts), and
 * decides: only when nothing was paid for, or nothing can have been, is `send` called (execute.ts:
 * reserve → send → settle). A replay or a join costs nothing and reserves nothing.
 *
 * - Earlier tries of this execution (`answerFor`): n8n's Retry On Fail runs the node again with the
 *   same input items and tells it nothing; Executions → Retry starts a new execution from a copy of
 *   the failed one's data, context data included, and runs the failed node under the same run index
 *   (n8n 2.41.1, workflow-execute.js). So each item's outcome is kept in the node's execution context
 *   data, by run index and item, with a digest of what was asked (changed parameters are a new
 *   generation) and the execution it happened in.
 * - Generations this n8n process holds for tool callers (`heldAnswer`): an MCP client gives a call
 *   60 s, a generation takes up to 5 minutes. A tool call with an answer bound joins the generation
 *   held for the same credential and request, or starts it, and answers within the bound with the
 *   images or "still running" and a handle; a repeat call, the handle, or n8n's tool retry joins the
 *   same generation instead of paying for another.
 *
 * Both keep one vocabulary, and one rule sorts a failure (`failureOutcome`):
 * - generated: returned again, never sent again;
 * - uncertain (sent, no clear answer: `mayHaveBeenCharged`): never sent again automatically; only
 *   Executions → Retry with Resend Uncertain Generations on sends it; held for 10 minutes for callers;
 * - refused (nothing charged) or never sent: Executions → Retry sends it again, Retry On Fail only
 *   when its code says a try a second later can pass (`retryOnFail`, codes.ts); not held for callers.
 */
import { type IDataObject, type IExecuteFunctions, sleep } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import {
	type ChargeOutcome,
	chargeHint,
	errorDescription,
	errorFacts,
	imagePackError,
	mayHaveBeenCharged,
} from '../../../shared/errors';
import { asNodeError } from '../../items';
import { contextData, isToolExecution } from '../../tool';
import type { Answer } from '../../../transport';
import type { GenerateResponse } from './output';
import type { ItemRun } from './plan';
import {
	type Held,
	type Memo,
	type Outcome,
	PendingGenerations,
	RunMemory,
	type StoredAnswer,
	generationKey,
	requestDigest,
} from './stores';

type Generated = Answer<GenerateResponse>;

/** The one rule of both places: a failure that may have been charged is uncertain, others refused. */
export function failureOutcome<F>(failure: F, facts: { charge: ChargeOutcome }): Outcome<never, F> {
	return mayHaveBeenCharged(facts) ? { kind: 'uncertain', failure } : { kind: 'refused', failure };
}

// Earlier tries of this execution.

export type Decision =
	| { action: 'send' }
	| { action: 'replay'; answer: StoredAnswer }
	| { action: 'report'; memo: Memo & { kind: 'uncertain' | 'refused' }; sameExecution: boolean };

/**
 * What to do with an item: `memo` is what an earlier try (or the execution this one retries)
 * recorded for it. A generated item comes back as it was; an uncertain one is never sent again by
 * the same execution, and by a retried one only when the user asks for it after checking the
 * session; a refused one is sent again by a retried execution (its cause may have been fixed) and,
 * within one execution, only when another try can pass.
 */
export function decide(
	memo: Memo | undefined,
	asked: { digest: string; executionId: string; resendUncertain: boolean },
): Decision {
	if (!memo || memo.digest !== asked.digest) return { action: 'send' };
	if (memo.kind === 'generated') return { action: 'replay', answer: memo.answer };
	const sameExecution = memo.executionId === asked.executionId;
	if (memo.kind === 'uncertain') {
		return sameExecution || !asked.resendUncertain
			? { action: 'report', memo, sameExecution }
			: { action: 'send' };
	}
	if (!sameExecution || rule(memo.failure.code).retryOnFail) return { action: 'send' };
	return { action: 'report', memo, sameExecution };
}

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
	// Outside an execution (none seen in n8n itself) retries start afresh.
	const store = contextData(ctx, 'node');
	const memory = new RunMemory(store, runIndexOf(ctx), String(ctx.getExecutionId?.() ?? ''));
	if (!asTool) memory.forgetEarlierRuns();
	return memory;
}

/**
 * Who asks, besides the body: the credential (another account's generation is not this one's to
 * return) and, for an AI Agent 3.x tool call, the model's call id, so that two identical calls are
 * two generations even if n8n ever gave them one run index; a Retry On Fail try keeps the item.
 */
function askedBy(ctx: IExecuteFunctions, itemIndex: number): string {
	const credential = String(ctx.getNode().credentials?.imagePackApi?.id ?? '');
	const toolCallId: unknown = ctx.getInputData()[itemIndex]?.json?.toolCallId;
	return typeof toolCallId === 'string' ? `${credential} ${toolCallId}` : credential;
}

/** The failure an earlier try (or the failed execution this one retries) met, reported again. */
function reportAgain(
	ctx: IExecuteFunctions,
	itemIndex: number,
	{ memo, sameExecution }: Extract<Decision, { action: 'report' }>,
) {
	const { failure } = memo;
	const facts = { ...failure, code: failure.code ?? ('unknown_error' as const), itemIndex };
	const describe = (next: string) => errorDescription(facts, next);
	if (memo.kind === 'uncertain') {
		return imagePackError(ctx.getNode(), facts, {
			message: `Not sent again: ${sameExecution ? 'an earlier try of this execution' : 'the failed execution this one retries'} sent this generation and got no clear answer (${facts.code}), so sending it again could pay twice`,
			description: describe(
				sameExecution
					? 'Retry On Fail never sends it again'
					: 'to send it again after checking, turn on Options → Resend Uncertain Generations and retry the execution with the saved workflow',
			),
		});
	}
	// Only a try of the same execution reports a refusal again: a retried execution sends it.
	return imagePackError(ctx.getNode(), facts, {
		message: failure.reason,
		description: describe(
			'Refused in an earlier try of this execution and not sent again: another try would be refused the same way. Fix the cause, then retry the execution from Executions: refused items are sent again there.',
		),
	});
}

/**
 * The item's paid answer: the one an earlier try got (returned, not sent again: `replayed`), or what
 * `send` gets now; an item an earlier try may have paid for, or saw refused for good, fails again
 * without being sent. What happens is remembered for the next try.
 */
export async function answerFor(
	{ ctx, itemIndex, plan: { request, options } }: ItemRun,
	memory: RunMemory,
	send: () => Promise<Generated>,
): Promise<Generated & { replayed?: true }> {
	const digest = requestDigest(request.body, askedBy(ctx, itemIndex));
	const decision = decide(memory.recall(itemIndex), {
		digest,
		executionId: memory.executionId,
		resendUncertain: options.resendUncertain,
	});
	if (decision.action === 'replay') return { ...(decision.answer as Generated), replayed: true };
	if (decision.action === 'report') throw reportAgain(ctx, itemIndex, decision);
	try {
		const answer = await send();
		const { body, status, requestId, unreadable } = answer; // JSON only: nothing downloaded
		const stored = { body, status, requestId, unreadable };
		memory.remember(itemIndex, digest, { kind: 'generated', answer: stored });
		return answer;
	} catch (error) {
		const facts = errorFacts(error);
		memory.remember(itemIndex, digest, failureOutcome(facts, facts));
		throw asNodeError(ctx, error, itemIndex);
	}
}

// Generations this process holds for tool callers. Module-level on purpose: they outlive a call.

const pending = new PendingGenerations<Generated>();

/** `promise`'s value, or undefined when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
	if (ms === Infinity) return await promise; // a timer would read Infinity as 1 ms
	const stop = new AbortController();
	const timer = sleep(ms, stop.signal).catch(() => {});
	return await Promise.race([promise, timer.then(() => undefined)]).finally(() => stop.abort());
}

/** What the caller is told while the generation runs on: how long, and how to collect it. */
function stillRunning({ ctx, plan }: ItemRun, held: Held<Generated>, boundMs: number) {
	const ago = Math.round((Date.now() - held.startedAt) / 1000);
	const left = Math.max(
		0,
		Math.round((held.startedAt + plan.options.timeoutMs - Date.now()) / 1000),
	);
	const options = ctx.getNode().parameters.options as IDataObject | undefined;
	const wired = /\$fromAI\(/i.test(String(options?.handle ?? ''));
	const how = wired
		? `call this tool again with the same arguments and handle "${held.handle}"`
		: 'call this tool again with exactly the same arguments';
	const message = `The generation is still running (started ${ago} s ago; a generation takes up to 5 minutes, this one is given up in ${left} s). Nothing more is charged to collect it: ${how}; that call waits up to ${boundMs / 1000} s for the result. With other arguments${wired ? ' and no handle' : ''} a new generation is started and charged.`;
	return { status: 'running', handle: held.handle, started_seconds_ago: ago, message };
}

/**
 * The generation's answer within `boundMs`: the one held for the same request (or `handle`), else
 * the one `send` starts now; `{ running }` when it is not done yet (the request goes on). A handle
 * this process does not hold never sends.
 */
export async function heldAnswer(
	item: ItemRun,
	boundMs: number,
	send: () => Promise<Generated>,
): Promise<Generated | { running: IDataObject }> {
	const { ctx, connection, itemIndex, plan } = item;
	const request = { body: plan.request.body, language: plan.options.acceptLanguage };
	const key = generationKey(connection.baseUrl, connection.apiKey, request);
	const failed = (error: unknown) => failureOutcome(error, errorFacts(error));
	const { handle } = plan.options;
	const held = handle ? pending.find(handle, key) : pending.join(key, send, failed).held;
	if (!held) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'unknown_handle', charge: 'not_sent', itemIndex },
			{
				message: `No generation with handle "${handle.slice(0, 40)}" is held by this n8n process: it was collected already, finished more than ${pending.limits.doneTtlMs / 60_000} minutes ago, n8n restarted, or another queue-mode worker ran it. Nothing was sent. ${chargeHint(plan.request.body.session_id)}; call without the handle only if the user wants a new, charged generation`,
			},
		);
	}
	const outcome = await within(held.done, boundMs);
	if (!outcome) return { running: stillRunning(item, held, boundMs) };
	pending.collected(held);
	if (outcome.kind === 'generated') return outcome.answer;
	throw outcome.failure;
}
