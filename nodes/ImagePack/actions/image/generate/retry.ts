/**
 * The n8n side of Generate's memory (memory.ts): where the records live, which run this is, the
 * answer of an item (remembered, or sent and remembered), and the error of an item not sent again.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { errorDescription, errorFacts, imagePackError } from '../../../shared/errors';
import { asNodeError } from '../../../shared/execution';
import { contextData, isToolExecution } from '../../../shared/tool';
import type { Answer } from '../../../transport';
import type { GenerateResponse } from './answer';
import { type Decision, RunMemory, decide, failureOutcome, requestDigest } from './memory';
import type { ItemPlan } from './options';

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
	decision: Extract<Decision, { action: 'report' }>,
) {
	const { memo, sameExecution } = decision;
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
 * The item's paid answer: the one an earlier try got (returned, not sent again), or what `send`
 * gets now; an item an earlier try may have paid for, or saw refused for good, fails again without
 * being sent. What happens is remembered for the next try.
 */
export async function answerFor(
	ctx: IExecuteFunctions,
	itemIndex: number,
	{ request, options }: ItemPlan,
	memory: RunMemory,
	replayed: number[],
	send: () => Promise<Answer<GenerateResponse>>,
): Promise<Answer<GenerateResponse>> {
	const digest = requestDigest(request.body, askedBy(ctx, itemIndex));
	const decision = decide(memory.recall(itemIndex), {
		digest,
		executionId: memory.executionId,
		resendUncertain: options.resendUncertain,
	});
	if (decision.action === 'replay') {
		replayed.push(itemIndex);
		return decision.answer as Answer<GenerateResponse>;
	}
	if (decision.action === 'report') throw reportAgain(ctx, itemIndex, decision);
	try {
		const answer = await send();
		const { body, status, requestId, unreadable } = answer; // JSON only: nothing downloaded
		const stored = { body, status, requestId, unreadable };
		memory.remember(itemIndex, digest, { kind: 'generated', answer: stored });
		return answer;
	} catch (error) {
		memory.remember(itemIndex, digest, failureOutcome(errorFacts(error)));
		throw asNodeError(ctx, error, itemIndex);
	}
}
