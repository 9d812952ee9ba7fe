/**
 * Generate's run. Every item is planned (read and checked) before the first request, so a bad row in
 * a batch costs nothing, and its identity is made once (identity.ts); items then run with bounded
 * concurrency on the item loop, output in input order. One item, top to bottom (`paidAnswer`):
 *
 *   verdict → [if it asks: prove the account | reserve credits → claim → verdict] → send → settle
 *
 * The verdict (verdict.ts) is asked first, on what the execution remembers of the item; only when it
 * asks is the item's account proven (another key's generation) or, once the caps let it, its ledger
 * values claimed (claims.ts, durable.ts), and it decides again: sent, returned again, or not sent.
 * `settle` keeps the outcome in the memory, the ledger and the credit caps, in one place. Only a send spends, and only once its
 * claim is written where it survives n8n being killed; the transport resends a generation only after
 * `429` or a connection refused before anything left. Why an item was not sent: verdict.ts, whose
 * `notSentError` words every such error. */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import {
	errorFacts,
	errorMessage,
	imagePackError,
	mayHaveBeenCharged,
} from '../../../shared/errors';
import { type Connection, connectionsPerItem, generate, proveOwnership } from '../../../transport';
import { addHints, asNodeError, eachItem, throwIfStopped } from '../../items';
import { runsAsTool } from '../../tool';
import { countUncertain, reserveCredits } from './credits';
import { type ClaimItem, type ClaimRun, claimSend, readAsSent } from './claims';
import { type Claimed, DurableRecord, type Settled } from './durable';
import { type Paid, heldAnswer } from './held';
import { runName } from './identity';
import { ledger } from './ledger';
import {
	type Answered,
	type Finish,
	type GenerateResponse,
	type Generated,
	chargedCredits,
	outputOf,
} from './output';
import { type ItemPlan, type ItemRun, planItem } from './plan';
import { cutOff, identities, openMemory, triedAgain } from './recall';
import type { Memo, Outcome, StoredFailure } from './stores';
import {
	type Facts,
	type NotSent,
	type Recorded,
	failureKind,
	notSentError,
	verdict,
} from './verdict';

/** What every item of one node run shares (what its claims need: claims.ts `ClaimRun`). */
interface Run extends ClaimRun {
	asTool: boolean;
	/** Items answered from the memory instead of being sent. */
	replayed: number[];
	/** Paid items' keys and windows, let go once the run ends with their answers (`handOver`). */
	delivered: Array<(delivered: boolean) => Promise<void>>;
	/** The run ended with its output, which n8n keeps (`handOver`). */
	handedOver: boolean;
	/** Errors of items the verdict did not send that may have been charged before (a Resend's). */
	notSent: Set<unknown>;
}

/** The item as the sequence sees it: its run, plan, identity, what the memory recognises. */
interface Item extends ItemRun, ClaimItem {}

/** What the verdict knows of an item before its claim. */
function factsOf(run: Run, { identity, memo, plan, record }: Item): Facts {
	return {
		memo,
		executionId: run.memory.executionId,
		fingerprint: identity.fingerprint,
		resendUncertain: plan.options.resendUncertain,
		earlierUncertain: run.asTool
			? run.memory.earlierUncertain(identity.digest, identity.fingerprint)
			: undefined,
		record,
	};
}

/** A generation made under another key: does its first file answer this key? */
async function prove(run: Run, item: Item): Promise<Facts['proof']> {
	const memo = item.memo as Memo & { kind: 'generated' };
	// One file answering this key proves its account for every record made under that other key.
	const pair = `${memo.fingerprint ?? ''} ${item.identity.fingerprint}`;
	if (run.memory.confirmed.has(pair)) return { same: true, reason: 'confirmed for this run' };
	const images = (memo.answer.body as { images?: unknown }).images;
	const first = Array.isArray(images) ? (images[0] as { url?: unknown } | undefined) : undefined;
	const { verdict: answer, reason } =
		typeof first?.url === 'string'
			? await proveOwnership(run.ctx, item.connection, { fileUrl: first.url }, item)
			: { verdict: 'unknown', reason: 'the answer holds no file to ask about' };
	if (answer === 'same' && memo.fingerprint) run.memory.confirmed.add(pair);
	return { same: answer === 'same', reason };
}

/** A failed send's error, with its facts; one without them (not ours) may have been charged. */
function sendFailure(run: Run, item: Item, error: unknown) {
	if (errorFacts(error).code !== undefined) return asNodeError(run.ctx, error, item.itemIndex);
	return imagePackError(
		run.ctx.getNode(),
		{
			code: 'unknown_error',
			charge: 'may_have_been_charged',
			itemIndex: item.itemIndex,
			sessionId: item.plan.request.body.session_id,
		},
		{ message: `The generation failed after it was sent: ${errorMessage(error)}` },
	);
}

/** What the item came to, kept in the execution's memory: a try, a retry or a repeat reads it. */
function remember(
	run: Run,
	{ identity, itemIndex }: Item,
	outcome: Outcome<Generated, StoredFailure>,
	left = false,
) {
	const asked = {
		digest: identity.digest,
		occurrence: identity.occurrence,
		fingerprint: identity.fingerprint,
		call: identity.call,
		...(left && { left: true as const }),
	};
	const kept =
		outcome.kind === 'generated'
			? { kind: outcome.kind, answer: storedAnswer(outcome.answer) }
			: outcome;
	run.memory.remember(itemIndex, asked, kept);
}

/**
 * After the item's verdict or send: what it came to is kept in the execution's memory, the record
 * keeps or lets go of its claim, and the credit caps count what was charged.
 */
async function settle(
	run: Run,
	item: Item,
	outcome: Outcome<Generated, StoredFailure> | { kind: 'not sent' },
	claimed: Claimed | undefined,
	credits?: (charged: number) => void,
): Promise<void> {
	const estimate = item.plan.request.creditsEstimated;
	const left = (await claimed?.settle(outcome.kind as Settled)) ?? false;
	if (outcome.kind !== 'not sent') remember(run, item, outcome, left);
	// A figure off contract (null, negative, text) counts as the estimate: caps hold (output.ts says so).
	const charged = {
		generated: () => chargedCredits((outcome as { answer: Generated }).answer?.body) ?? estimate,
		uncertain: () => estimate,
		refused: () => 0,
		'not sent': () => 0,
	}[outcome.kind]();
	credits?.(charged);
}

/** JSON only: nothing downloaded is kept. */
function storedAnswer({ body, status, requestId, unreadable }: Generated) {
	return { body, status, requestId, unreadable };
}

/** The item's credit reservation; a cap it would pass is its refusal, kept in the memory. */
async function reserved(run: Run, item: Item): Promise<(charged: number) => void> {
	const { ctx, itemIndex, plan } = item;
	try {
		return reserveCredits(ctx, itemIndex, plan.request.creditsEstimated, plan.options);
	} catch (caught) {
		const error = asNodeError(ctx, caught, itemIndex);
		await settle(run, item, { kind: 'refused', failure: errorFacts(error) }, undefined);
		throw error;
	}
}

/**
 * One item's paid answer, top to bottom: what the execution remembers of it (`item.memo`), the
 * credit reservation and its claim in the durable record, the verdict, the send, and what it all
 * came to.
 * `answered` lets a tool call's record go once the caller has the answer.
 */
async function paidAnswer(run: Run, item: Item): Promise<Paid & { replayed?: true }> {
	const { ctx, itemIndex, plan } = item;
	let facts = factsOf(run, item);
	let claimed: Claimed | undefined;
	let credits: ((charged: number) => void) | undefined;
	let decided = verdict(facts);
	while (decided.kind === 'prove' || decided.kind === 'claim') {
		if (decided.kind === 'prove') facts = { ...facts, proof: await prove(run, item) };
		else {
			// The caps before the claim: an item they refuse records nothing (a twin row of its key
			// would take the key for used). One the run's read found sent is only reported.
			if (!foundSent(run, item)) credits ??= await reserved(run, item);
			let recorded: Recorded | undefined;
			[claimed, recorded] = await claimSend(run, item, decided.claim);
			facts = { ...facts, recorded };
		}
		decided = verdict(facts);
	}
	if (decided.kind === 'replay') {
		const answer = decided.answer as Generated;
		if (decided.proven) {
			addHints(ctx, [
				`Generated by an earlier try under another API key of the same account (${decided.proven}): returned without being sent again.`,
			]);
		}
		credits?.(0);
		await settle(run, item, { kind: 'generated', answer }, claimed);
		// Delivered now: a key an earlier attempt left open is used.
		const keyOpen = item.identity.keyOpen ? [item.identity.keyOpen] : [];
		return {
			answer,
			answered: async (delivered = true) => (delivered ? run.durable.release(keyOpen) : undefined),
			replayed: true,
		};
	}
	if (decided.kind === 'notSent') {
		await settle(run, item, { kind: 'not sent' }, claimed, credits);
		const { session_id: sessionId } = plan.request.body;
		const error = notSentError(ctx.getNode(), decided.why, {
			itemIndex,
			sessionId,
			idempotencyKey: plan.options.idempotencyKey,
		});
		// Its own send by an attempt n8n did not finish, or another key's generation: from now on an
		// uncertain send of this execution, so a try, or the same call again (an agent's repeat),
		// reports it, a retry of it resends it on the user's word.
		if (ownUncertain(decided.why)) {
			remember(run, item, { kind: 'uncertain', failure: errorFacts(error) });
		}
		// Sent by another attempt (n8n stopped, another retry of the same execution, the key's other
		// run): no ledger this execution has counted it in, so the caps count its estimate (those
		// the run's read found are counted already).
		if (decided.why.code === 'interrupted_send' && !foundSent(run, item)) {
			countUncertain(ctx, plan.request.creditsEstimated, plan.options);
		}
		// Nothing leaves for it now; what may have been charged is for a Resend (below, `execute`).
		if (failureKind(errorFacts(error)) === 'uncertain') run.notSent.add(error);
		throw error;
	}
	try {
		const { acceptLanguage, timeoutMs } = plan.options;
		const call = { itemIndex, acceptLanguage, timeoutMs };
		const answer = await generate<GenerateResponse>(
			ctx,
			item.connection,
			{ ...plan.request.body },
			call,
		);
		await settle(run, item, { kind: 'generated', answer }, claimed, credits);
		return { answer, answered: async (delivered) => claimed?.answered(delivered) };
	} catch (caught) {
		const error = sendFailure(run, item, caught);
		const facts = errorFacts(error);
		await settle(run, item, { kind: failureKind(facts), failure: facts }, claimed, credits);
		throw error;
	}
}

/**
 * What is left of a paid item (reading its answer, downloads, output items): an error there comes
 * after the charge, so it says so, with the session, never "not sent". `answered` lets a tool
 * call's record go once its output is built, not before: a repeat after a failed output is
 * reported, not paid again.
 */
function paidFinish(
	run: Run,
	item: Item,
	answer: Generated,
	answered: () => Promise<void>,
): Answered {
	const failedAfterPaying = (error: unknown) =>
		imagePackError(
			run.ctx.getNode(),
			{
				code: 'server_fault',
				charge: 'may_have_been_charged',
				itemIndex: item.itemIndex,
				sessionId: sessionOf(answer) ?? item.plan.request.body.session_id,
			},
			{
				message: `The generation was answered and charged, but its answer could not be read: ${errorMessage(error)}`,
				secret: item.connection.apiKey,
			},
		);
	// From then on an uncertain send of this execution: a try or a repeat reports it.
	const failed = (error: unknown) => {
		const failure = failedAfterPaying(error);
		remember(run, item, { kind: 'uncertain', failure: errorFacts(failure) });
		return failure;
	};
	let output: Answered;
	try {
		output = outputOf(item, answer);
	} catch (error) {
		throw failed(error);
	}
	return {
		paid: output.paid,
		finish: async () => {
			const items = await output.finish().catch((error: unknown) => {
				throw failed(error);
			});
			await answered();
			return items;
		},
	};
}

function sessionOf(answer: Generated): string | undefined {
	const session = (answer.body as { session_id?: unknown } | undefined)?.session_id;
	return typeof session === 'string' && session ? session : undefined;
}

/** A retry's item its read of the record found sent by an attempt n8n stopped (no memory of it). */
function foundSent(run: Run, item: Item): boolean {
	return !item.memo && readAsSent(run, item);
}

/**
 * A retry's item whose saved record another retry of the same record has sent again since (its
 * `again` value found): that spend is not in the record this retry starts from, so it counts here.
 */
function resentElsewhere(run: Run, item?: Item): boolean {
	if (!item?.memo || item.record !== 'run') return false;
	return run.durable.sentBefore(ledger.again(item.memo.executionId, item.identity.send));
}

/** Whether an earlier attempt paid for the item, or may have: it is returned or reported, not sent. */
function paidBefore(run: Run, item?: Item): boolean {
	if (!item) return false;
	return item.memo ? item.memo.kind !== 'refused' : foundSent(run, item);
}

/** A not-sent verdict about this item's own earlier send, which its execution now reports. */
function ownUncertain(why: NotSent): boolean {
	if (why.code === 'other_key') return true;
	return why.code === 'interrupted_send' && (why.by === 'stop' || why.by === 'tool');
}

/** Generates an item (or joins or replays its generation). */
async function generateItem(run: Run, item: Item): Promise<Answered> {
	// As a tool with an answer bound: join the generation this process holds, or start it.
	const bound = run.asTool ? item.plan.options.answerWithinMs : undefined;
	if (bound !== undefined) {
		const answer = await heldAnswer(
			item,
			item.identity.held,
			bound,
			async () => await paidAnswer(run, item),
		);
		if ('running' in answer) {
			const running = [{ json: answer.running, pairedItem: { item: item.itemIndex } }];
			return { paid: undefined, finish: async () => running }; // not paid for yet
		}
		return paidFinish(run, item, answer.answer, async () => {
			await answer.collect();
			await run.durable.flush();
		});
	}
	const { answer, answered, replayed } = await paidAnswer(run, item);
	if (replayed) run.replayed.push(item.itemIndex);
	// Its key and windows are let go when the run ends, once its output is built.
	return paidFinish(run, item, answer, async () => void run.delivered.push(answered));
}

/** The items' downloads after the last generation, in input order; a failed item keeps its error. */
async function finishLater(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	failed: INodeExecutionData[],
	later: Map<number, Finish>,
) {
	const errors = new Map(failed.map((item) => [(item.pairedItem as { item: number }).item, item]));
	// Paid for: a Stop lets them finish (a download it cuts is reported on the item).
	return await eachItem(
		ctx,
		items,
		async (itemIndex) => {
			const error = errors.get(itemIndex);
			return (await later.get(itemIndex)?.()) ?? (error ? [error] : []);
		},
		1,
		undefined,
		false,
	);
}

/** Says which items came from an earlier try instead of a request. */
function hintReplayed(ctx: IExecuteFunctions, replayed: number[]) {
	if (!replayed.length) return;
	const items = [...replayed].sort((a, b) => a - b).join(', ');
	addHints(ctx, [
		`${replayed.length === 1 ? 'Item' : 'Items'} ${items}: generated by an earlier try (Retry On Fail, or the execution this one retries) and returned again without being sent or charged again.`,
	]);
}

/**
 * The run's error under Stop Workflow, naming every item that may have been charged (so each is
 * shown, and a retry with Resend may resend it: what it resends is what was shown): the first of
 * them, or the failure that stopped the run.
 */
function uncertainNamed(
	ctx: IExecuteFunctions,
	uncertain: Array<{ itemIndex: number; error: unknown }>,
	stopped?: unknown,
) {
	const sorted = [...uncertain].sort((a, b) => a.itemIndex - b.itemIndex);
	const [first] = sorted;
	const failure =
		stopped === undefined
			? asNodeError(ctx, first.error, first.itemIndex)
			: asNodeError(ctx, stopped);
	const others = sorted.filter(({ error }) => error !== failure);
	if (others.length) {
		const list = others.map(({ itemIndex, error }) => `${itemIndex} (${errorFacts(error).code})`);
		failure.description = [
			failure.description,
			`Also reported maybe charged: items ${list.join(', ')}.`,
		]
			.filter(Boolean)
			.join(' · ');
	}
	return failure;
}

/** Without Continue On Fail n8n drops this run's output: the error says what was already paid for. */
function withPaidNote(ctx: IExecuteFunctions, error: unknown, paid: string[]) {
	const failure = asNodeError(ctx, error);
	if (paid.length) {
		failure.description = [
			failure.description,
			`Generated and charged before this error, not in the output: ${paid.join(', ')}. A retry (Retry On Fail, or Executions → Retry) returns them without generating them again; set the node's On Error setting to "Continue" so one failing item does not discard the others.`,
		]
			.filter(Boolean)
			.join(' · ');
	}
	return failure;
}

export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	const continueOnFail = this.continueOnFail();
	const asTool = runsAsTool(this);
	// Every item planned, and its credential resolved (per item), before anything is sent.
	const connectionOf = connectionsPerItem(this);
	const plans: Array<ItemPlan | Error> = [];
	const connections: Array<Connection | undefined> = [];
	for (const itemIndex of items.keys()) {
		try {
			plans.push(planItem(this, itemIndex));
			connections.push(await connectionOf(itemIndex));
		} catch (error) {
			if (!continueOnFail) throw asNodeError(this, error, itemIndex);
			plans[itemIndex] = error as Error;
			connections[itemIndex] = undefined;
		}
	}
	const run: Run = {
		ctx: this,
		asTool,
		memory: openMemory(this, asTool),
		durable: new DurableRecord(this),
		replayed: [],
		delivered: [],
		handedOver: false,
		notSent: new Set(),
		claims: 0,
		cutOff: false,
		paidKeys: new Set(),
	};
	run.cutOff = !asTool && cutOff(this, run.memory);
	const known = identities(this, run.memory, plans, connections);
	const runItems = plans.map((plan, itemIndex) => {
		if (plan instanceof Error) return undefined;
		// Held for an answer bound: no run to name (verdict.ts `Facts`).
		const held = asTool && plan.options.answerWithinMs !== undefined;
		const record = held ? ('tool' as const) : ('run' as const);
		const connection = connections[itemIndex]!;
		return { ctx: this, connection, asTool, itemIndex, plan, ...known[itemIndex]!, record };
	});
	for (const item of runItems) {
		const { identity, memo } = item ?? {};
		const paidHere = memo?.kind === 'generated' && memo.fingerprint === identity?.fingerprint;
		if (identity?.key && paidHere) run.paidKeys.add(identity.key);
	}
	const first = plans.find((plan): plan is ItemPlan => !(plan instanceof Error));
	const lanes = first?.options.concurrency ?? 1;
	// The ledger's rows counted once per execution: a run that finds one full says so.
	const keyed = runItems.some((item) => item?.identity.key);
	const rows = asTool ? { sends: 0, keys: 0 } : (run.memory.rows ??= await run.durable.rows(keyed));
	// A retry reads which of its sends were moved to the node's row, once for the node run.
	const sends = runItems.flatMap((item) =>
		item?.record === 'run'
			? [
					item.identity.send,
					...(run.cutOff && item.identity.witness ? [item.identity.witness] : []),
					...(item.memo ? [ledger.again(item.memo.executionId, item.identity.send)] : []),
				]
			: [],
	);
	// Under a credit cap a retry also asks the claims' row, a wave of lanes at a time, so that what
	// an attempt n8n killed sent counts before anything new is sent (below).
	const capped =
		first && first.options.maxCreditsPerExecution + first.options.maxCreditsPerHour > 0;
	const retry = this.getMode() === 'retry';
	await run.durable.open(runName(this), run.memory.executionId, sends, retry, capped ? lanes : 0);
	// A retry's items its read found sent before the stop are only reported. Their estimates count
	// under the caps now, before anything new is sent, even if this run is stopped before it reports
	// them; under Continue On Fail they are taken up last, while the sends wait on the service.
	const reported = runItems.map((item) => !!item && foundSent(run, item));
	reported.forEach((found, index) => {
		const { plan } = runItems[index] ?? {};
		const resent = resentElsewhere(run, runItems[index]);
		if ((found || resent) && plan) countUncertain(this, plan.request.creditsEstimated, plan.options);
	});
	const order = continueOnFail
		? [...items.keys()].sort((a, b) => Number(reported[a]) - Number(reported[b]))
		: undefined;
	// One lane: downloads wait for the last generation at no cost in time, and back to back their
	// buffers cost n8n's heap fewer full collections than between generations (docs/performance.md).
	// More lanes: a download overlaps the other lanes' generations.
	const later = lanes === 1 && items.length > 1 ? new Map<number, Finish>() : undefined;
	const paid: string[] = [];
	// Under Stop Workflow the run's error names every item that may have been charged: a retry
	// with Resend resends exactly those. One not sent because it may have been charged before
	// stops nothing (nothing leaves for it): the others run, so that one retry sends what never
	// left and reports all of them, and its retry with Resend resends them all.
	const uncertain: Array<{ itemIndex: number; error: unknown }> = [];
	try {
		const output = await eachItem(
			this,
			items,
			async (itemIndex) => {
				const plan = plans[itemIndex];
				if (plan instanceof Error) throw plan;
				// After a Stop no item starts that would send; one an earlier try paid for, or may
				// have, is returned or reported. Under Continue On Fail the others are error items, so
				// what was paid before the Stop keeps its place in the output.
				if (!paidBefore(run, runItems[itemIndex])) throwIfStopped(this, itemIndex);
				try {
					const { paid: label, finish } = await generateItem(run, runItems[itemIndex]!);
					if (label) paid.push(label);
					if (!later) return await finish();
					later.set(itemIndex, finish);
					return [];
				} catch (caught) {
					const error = asNodeError(this, caught, itemIndex);
					if (continueOnFail || asTool) throw error;
					if (mayHaveBeenCharged(errorFacts(error))) uncertain.push({ itemIndex, error });
					if (!run.notSent.has(caught)) throw error;
					return [];
				}
			},
			lanes,
			order,
			false, // checked above, per item
		);
		if (uncertain.length) throw uncertainNamed(this, uncertain);
		hintReplayed(this, run.replayed);
		if (run.claims) addHints(this, DurableRecord.full(rows, keyed));
		return handOver(run, later ? await finishLater(this, items, output, later) : output);
	} catch (error) {
		// Stopped between items with paid ones waiting for their downloads: they are returned, the
		// rest was never started (a request the Stop cut is thrown: it may have been charged).
		const { code, charge } = errorFacts(error);
		if (later?.size && code === 'cancelled' && charge === 'not_sent') {
			return handOver(run, await finishLater(this, items, [], later));
		}
		throw withPaidNote(
			this,
			uncertain.length ? uncertainNamed(this, uncertain, error) : error,
			paid,
		);
	} finally {
		for (const answered of run.delivered) await answered(run.handedOver);
		await run.durable.flush();
	}
}

/**
 * The run ends with its output: its paid keys are used, no longer open (in `finally`). A run that
 * throws, or whose output n8n drops to try again, hands nothing over: they stay open, the next try
 * or a retry returns them from the execution's memory and lets them go, any other execution reports
 * them `interrupted_send`.
 */
function handOver(run: Run, output: INodeExecutionData[]): INodeExecutionData[] {
	run.handedOver = run.asTool || !triedAgain(run.ctx, run.memory, output);
	return output;
}
