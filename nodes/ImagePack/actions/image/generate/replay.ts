/**
 * Was this generation paid for already? Before an item is sent, what an earlier send of the same
 * request came to is looked up in one of two places, each with its own lifetime (stores.ts), and
 * decides: only when nothing was paid for, or nothing can have been, is the send recorded where it
 * survives n8n being killed (durable.ts) and then made (execute.ts: reserve → send → settle). A
 * replay or a join costs nothing and reserves nothing.
 *
 * Who asks is the account behind the key: every record carries the key's fingerprint; one made under
 * another key is returned only once its file answers this key (`proveOwnership`), else it is uncertain.
 *
 * - Earlier tries of this execution (`answerFor`): n8n's Retry On Fail runs the node again with the
 *   same input items and tells it nothing; Executions → Retry starts a new execution from a copy of
 *   the failed one's data, context data included, and runs the failed node under the same run index
 *   (n8n 2.41.1, workflow-execute.js). So each item's outcome is kept in the node's execution context
 *   data, by run index and item, with a digest of what was asked (changed parameters, or another
 *   Accept Language, are a new generation), the key's fingerprint and the execution it happened in.
 *   That record decides first; the durable record decides for an item it does not hold (n8n stopped
 *   before the node finished) and for what another execution's record would send again (`consultFor`).
 * - Generations this process holds for tool callers (`heldAnswer`, held.ts): a tool call with an answer
 *   bound joins the one held for the same node, key and request, or starts it.
 *
 * Both keep one vocabulary, and one rule sorts a failure (`failureOutcome`):
 * - generated: returned again, never sent again;
 * - uncertain (sent, no clear answer: `mayHaveBeenCharged`): never sent again automatically; only
 *   Executions → Retry with Resend Uncertain Generations on sends it; held for 10 minutes for callers;
 * - refused (nothing charged) or never sent: Executions → Retry sends it again, Retry On Fail only
 *   when its code says a try a second later can pass (`retryOnFail`, codes.ts); not held for callers.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import {
	type ChargeOutcome,
	errorFacts,
	imagePackError,
	mayHaveBeenCharged,
} from '../../../shared/errors';
import { addHints, asNodeError } from '../../items';
import { contextData, isToolExecution } from '../../tool';
import { type Answer, proveOwnership } from '../../../transport';
import { type Claim, isResentValue, keyValue } from './durable';
import type { GenerateResponse } from './output';
import type { ItemRun } from './plan';
import { notSentAgain, reportAgain } from './refusals';
import { type Memo, type Outcome, RunMemory, type StoredAnswer, requestDigest } from './stores';

export type Generated = Answer<GenerateResponse>;

/** How an item's generation is sent: recorded first (`claim`, durable.ts), then `send` (execute.ts). */
export interface Sender {
	send: () => Promise<Generated>;
	/** `resentFrom`: the execution whose uncertain record the user resends (durable.ts `sendValues`). */
	claim: (resentFrom?: string) => Promise<Claim | { failed: string }>;
}

/** The one rule of both places: a failure that may have been charged is uncertain, others refused. */
export function failureOutcome<F>(failure: F, facts: { charge: ChargeOutcome }): Outcome<never, F> {
	return mayHaveBeenCharged(facts) ? { kind: 'uncertain', failure } : { kind: 'refused', failure };
}

// Earlier tries of this execution.

export type Decision =
	| { action: 'send' }
	| { action: 'replay'; answer: StoredAnswer }
	/** Generated under another key: returned only if the API confirms the account (`proven`). */
	| { action: 'prove'; memo: Memo & { kind: 'generated' } }
	| { action: 'report'; memo: Memo & { kind: 'uncertain' | 'refused' }; sameExecution: boolean };

/** What an item asks, and by whom. */
export interface Asked {
	digest: string;
	/** An AI Agent 3.x tool call's id ('' otherwise). */
	call: string;
	fingerprint: string;
	executionId: string;
	resendUncertain: boolean;
}

/**
 * What to do with an item: `memo` is what an earlier try (or the execution this one retries)
 * recorded for it. A generated item comes back as it was (made under another key: once the account
 * is confirmed); an uncertain one is never sent again by the same execution, and by a retried one
 * only when the user asks for it after checking the session; a refused one is sent again by a
 * retried execution (its cause may have been fixed) and, within one execution, only when another try
 * can pass.
 */
export function decide(memo: Memo | undefined, asked: Asked): Decision {
	if (!memo) return { action: 'send' };
	const sameExecution = memo.executionId === asked.executionId;
	// Within one execution the workflow cannot change: a digest that moved between Retry On Fail's
	// tries comes from an expression such as $now or a random value, and the item is the same one
	// (unless an agent's call id says it is another call).
	const same = sameExecution ? (memo.call ?? '') === asked.call : memo.digest === asked.digest;
	if (!same) return { action: 'send' };
	if (memo.kind === 'generated') {
		return memo.fingerprint === asked.fingerprint
			? { action: 'replay', answer: memo.answer }
			: { action: 'prove', memo };
	}
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
export function runIndexOf(ctx: IExecuteFunctions): number {
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
 * What an item asks: the body and the language of the answer's warnings, and for an AI Agent 3.x
 * tool call the model's call id, so that two identical calls are two generations even if n8n ever
 * gave them one run index. Who asks is not in it: that is the key's fingerprint, kept beside it.
 */
export function itemDigest(
	ctx: IExecuteFunctions,
	{ itemIndex, plan }: Pick<ItemRun, 'itemIndex' | 'plan'>,
) {
	const request = { body: plan.request.body, language: plan.options.acceptLanguage };
	return requestDigest(request, toolCallOf(ctx, itemIndex));
}

/** The model's call id of an AI Agent 3.x tool call ('' for anything else). */
function toolCallOf(ctx: IExecuteFunctions, itemIndex: number): string {
	const toolCallId: unknown = ctx.getInputData()[itemIndex]?.json?.toolCallId;
	return typeof toolCallId === 'string' ? toolCallId : '';
}

/**
 * What the durable record decides for a send, given the record of the execution (`memo`):
 * - `all`: nothing in the execution's record (n8n stopped before it was saved), or a refusal saved by
 *   another execution — a refused send lets go of its record, so one found there was sent by a later
 *   attempt (a retry of the same failed execution) that n8n saved elsewhere;
 * - `resend`: the user resends an uncertain (or another key's) generation saved by another execution:
 *   its own record is expected, but a mark that this same record was resent already is not;
 * - `none`: a try of this execution (Retry On Fail) decided with the execution's own record.
 */
export type Consult = 'all' | 'resend' | 'none';

export function consultFor(memo: Memo | undefined, executionId: string): Consult {
	if (!memo) return 'all';
	if (memo.executionId === executionId) return 'none';
	return memo.kind === 'refused' ? 'all' : 'resend';
}

/**
 * Records the send before it is made (durable.ts), and lets what earlier attempts left there decide
 * as `consult` says. Nothing is sent when the record cannot be written.
 */
export async function recordSend(
	item: ItemRun,
	claim: Sender['claim'],
	consult: Consult,
	/** The execution whose record decided the send, if another one's. */
	from?: string,
): Promise<Claim> {
	const { ctx, itemIndex, plan } = item;
	const claimed = await claim(consult === 'resend' ? from : undefined);
	if ('failed' in claimed) {
		throw imagePackError(
			ctx.getNode(),
			{ code: 'record_failed', charge: 'not_sent', itemIndex },
			{
				message: `Not sent: the record that keeps this generation from being paid twice if n8n stops could not be written (${claimed.failed})`,
				description:
					"The node writes it to n8n's database before every generation; try again in a moment.",
			},
		);
	}
	const earlier = [...claimed.earlier];
	if (consult === 'none' || earlier.length === 0) return claimed;
	if (consult === 'resend') {
		if (!earlier.some(isResentValue)) return claimed;
		await claimed.release('all');
		throw notSentAgain(item, 'interrupted_send', 'resent');
	}
	const { idempotencyKey, clearIdempotencyKey, resendUncertain } = plan.options;
	const keyUsed = idempotencyKey !== '' && claimed.earlier.has(keyValue(idempotencyKey));
	const sentBefore = earlier.some((value) => value !== keyValue(idempotencyKey));
	if (sentBefore && !resendUncertain) {
		await claimed.release('all');
		// With a refusal saved by the execution it retries, the send was a later retry's, not a stop.
		throw notSentAgain(item, 'interrupted_send', from === undefined ? '' : 'retried');
	}
	if (keyUsed && !clearIdempotencyKey) {
		await claimed.release('all');
		throw notSentAgain(item, 'idempotency_key_used');
	}
	return claimed;
}

/** A generation made under another key: returned if the API confirms the account, else reported. */
async function proven(
	item: ItemRun,
	memory: RunMemory,
	{ memo }: Extract<Decision, { action: 'prove' }>,
	resendUncertain: boolean,
): Promise<Decision> {
	// One file answering this key proves the account for every record made under that other key.
	const made = memo.fingerprint ?? '';
	if (memory.confirmed.has(made)) return { action: 'replay', answer: memo.answer };
	const images = (memo.answer.body as { images?: unknown }).images;
	const first = Array.isArray(images) ? (images[0] as { url?: unknown } | undefined) : undefined;
	const { verdict, reason } =
		typeof first?.url === 'string'
			? await proveOwnership(item.ctx, item.connection, { fileUrl: first.url }, item)
			: { verdict: 'unknown', reason: 'the answer holds no file to ask about' };
	if (verdict === 'same') {
		if (made) memory.confirmed.add(made);
		addHints(item.ctx, [
			`Generated by an earlier try under another API key of the same account (${reason}): returned without being sent again.`,
		]);
		return { action: 'replay', answer: memo.answer };
	}
	if (resendUncertain) return { action: 'send' };
	throw notSentAgain(item, 'other_key', reason);
}

/**
 * The item's paid answer: the one an earlier try got (returned, not sent again: `replayed`), or what
 * `send` gets now, recorded first (`claim`); an item an earlier try may have paid for, or saw
 * refused for good, fails again without being sent. What happens is remembered for the next try.
 */
export async function answerFor(
	item: ItemRun,
	memory: RunMemory,
	{ send, claim }: Sender,
): Promise<Generated & { replayed?: true }> {
	const { ctx, connection, itemIndex, plan } = item;
	const asked = {
		digest: itemDigest(ctx, item),
		call: toolCallOf(ctx, itemIndex),
		fingerprint: connection.fingerprint,
		executionId: memory.executionId,
		resendUncertain: plan.options.resendUncertain,
	};
	const memo = memory.recall(itemIndex);
	let decision = decide(memo, asked);
	const { digest, call, fingerprint } = asked;
	const record = { digest, call, fingerprint };
	if (decision.action === 'prove') {
		decision = await proven(item, memory, decision, asked.resendUncertain);
	}
	if (decision.action === 'replay') {
		memory.remember(itemIndex, record, { kind: 'generated', answer: decision.answer });
		return { ...(decision.answer as Generated), replayed: true };
	}
	if (decision.action === 'report') throw reportAgain(ctx, itemIndex, decision);
	const claimed = await recordSend(
		item,
		claim,
		consultFor(memo, memory.executionId),
		memo?.executionId,
	);
	try {
		const answer = await send();
		const { body, status, requestId, unreadable } = answer; // JSON only: nothing downloaded
		const stored = { body, status, requestId, unreadable };
		memory.remember(itemIndex, record, { kind: 'generated', answer: stored });
		await claimed.release('tool'); // a tool caller has its answer; a run's send stays recorded
		return answer;
	} catch (error) {
		const facts = errorFacts(error);
		memory.remember(itemIndex, record, failureOutcome(facts, facts));
		if (!mayHaveBeenCharged(facts)) await claimed.release('all');
		throw asNodeError(ctx, error, itemIndex);
	}
}
