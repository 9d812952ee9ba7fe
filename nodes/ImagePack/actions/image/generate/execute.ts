/**
 * Generate's run: plan → replay or join a held generation, else record → reserve → send → settle →
 * output. Every item is planned (read and checked) before the first request, so a bad row in a
 * batch costs nothing; items then run with bounded concurrency on the item loop, output in input
 * order. Can an item be charged twice? Only `send` spends, and only when replay.ts finds nothing that
 * was or may have been paid for (a replay or a join reserves nothing) and the send is recorded where
 * it survives n8n being killed (durable.ts); the transport itself resends a generation only after
 * `429` or a connection refused before anything left.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { errorFacts, mayHaveBeenCharged } from '../../../shared/errors';
import { addHints, asNodeError, eachItem } from '../../items';
import { runsAsTool } from '../../tool';
import { type Connection, generate, getConnection } from '../../../transport';
import { reserveCredits } from './credits';
import { DurableRecord, keyValue, runName, sendValues } from './durable';
import {
	type Answered,
	type Finish,
	type GenerateResponse,
	chargedCredits,
	outputOf,
} from './output';
import { type ItemPlan, type ItemRun, planItem } from './plan';
import { heldAnswer } from './held';
import { answerFor, itemDigest, openMemory, runIndexOf } from './replay';
import { type RunMemory, requestDigest } from './stores';

/** What every item of one node run shares. */
interface Run {
	ctx: IExecuteFunctions;
	connection: Connection;
	asTool: boolean;
	memory: RunMemory;
	durable: DurableRecord;
	/** What the durable record calls this run (durable.ts `runName`), and the node's run index. */
	run: string;
	runIndex: number;
	/** Per item: how many earlier items of the run ask exactly the same. */
	occurrence: number[];
	/** Items answered from the memory instead of being sent. */
	replayed: number[];
}

/** Reserve → send → settle: the one place a generation is sent and its credits counted. */
async function send({ ctx, connection, itemIndex, plan: { request, options } }: ItemRun) {
	const estimate = request.creditsEstimated;
	const settle = reserveCredits(ctx, itemIndex, estimate, options);
	try {
		const { acceptLanguage, timeoutMs } = options;
		const call = { itemIndex, acceptLanguage, timeoutMs };
		const answer = await generate<GenerateResponse>(ctx, connection, { ...request.body }, call);
		// A figure off contract (null, negative, text) counts as the estimate: caps hold (output.ts says so).
		settle(chargedCredits(answer.body) ?? estimate);
		return answer;
	} catch (error) {
		settle(mayHaveBeenCharged(errorFacts(error)) ? estimate : 0);
		throw asNodeError(ctx, error, itemIndex);
	}
}

/** Records the item's send in n8n's database (durable.ts); clears its Idempotency Key first if asked. */
async function claim(run: Run, item: ItemRun, resentFrom?: string) {
	const { ctx, itemIndex, plan } = item;
	const { idempotencyKey, clearIdempotencyKey } = plan.options;
	const { values, tool } = sendValues({
		asTool: run.asTool,
		run: run.run,
		runIndex: run.runIndex,
		digest: itemDigest(ctx, item),
		requestOnly: requestDigest({ body: plan.request.body, language: plan.options.acceptLanguage }),
		occurrence: run.occurrence[itemIndex],
		idempotencyKey,
		now: Date.now(),
		resentFrom,
	});
	if (clearIdempotencyKey && idempotencyKey) await run.durable.forget([keyValue(idempotencyKey)]);
	return await run.durable.claim(values, tool);
}

/** Generates an item (or joins or replays its generation). */
async function generateItem(run: Run, itemIndex: number, plan: ItemPlan): Promise<Answered> {
	const item: ItemRun = { ...run, itemIndex, plan };
	const sender = {
		send: async () => await send(item),
		claim: async (resentFrom?: string) => await claim(run, item, resentFrom),
	};
	// As a tool with an answer bound: join the generation this process holds, or start it.
	// Otherwise: what an earlier try of this execution got, or a new send.
	const bound = run.asTool ? plan.options.answerWithinMs : undefined;
	const answer =
		bound !== undefined
			? await heldAnswer(item, bound, sender)
			: await answerFor(item, run.memory, sender);
	if ('running' in answer) {
		const running = [{ json: answer.running, pairedItem: { item: itemIndex } }];
		return { paid: undefined, finish: async () => running }; // not paid for yet
	}
	if ('replayed' in answer) run.replayed.push(itemIndex);
	return outputOf(item, answer);
}

/** The items' downloads after the last generation, in input order; a failed item keeps its error. */
async function finishLater(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	failed: INodeExecutionData[],
	later: Map<number, Finish>,
) {
	const errors = new Map(failed.map((item) => [(item.pairedItem as { item: number }).item, item]));
	return await eachItem(ctx, items, async (itemIndex) => {
		const error = errors.get(itemIndex);
		return (await later.get(itemIndex)?.()) ?? (error ? [error] : []);
	});
}

/** Per item, how many earlier items ask exactly the same: identical items are separate sends. */
function occurrences(ctx: IExecuteFunctions, plans: Array<ItemPlan | Error>): number[] {
	const seen = new Map<string, number>();
	return plans.map((plan, itemIndex) => {
		if (plan instanceof Error) return 0;
		const digest = itemDigest(ctx, { itemIndex, plan });
		const count = seen.get(digest) ?? 0;
		seen.set(digest, count + 1);
		return count;
	});
}

/** Says which items came from an earlier try instead of a request. */
function hintReplayed(ctx: IExecuteFunctions, replayed: number[]) {
	if (!replayed.length) return;
	const items = [...replayed].sort((a, b) => a - b).join(', ');
	addHints(ctx, [
		`${replayed.length === 1 ? 'Item' : 'Items'} ${items}: generated by an earlier try (Retry On Fail, or the execution this one retries) and returned again without being sent or charged again.`,
	]);
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
	const plans = items.map((_item, itemIndex): ItemPlan | Error => {
		try {
			return planItem(this, itemIndex);
		} catch (error) {
			if (!continueOnFail) throw asNodeError(this, error, itemIndex);
			return error as Error;
		}
	});
	const run: Run = {
		ctx: this,
		connection: await getConnection(this),
		asTool,
		memory: openMemory(this, asTool),
		durable: new DurableRecord(this),
		run: runName(this),
		runIndex: runIndexOf(this),
		occurrence: occurrences(this, plans),
		replayed: [],
	};
	const first = plans.find((plan): plan is ItemPlan => !(plan instanceof Error));
	const lanes = first?.options.concurrency ?? 1;
	// One lane: downloads wait for the last generation at no cost in time, and back to back their
	// buffers cost n8n's heap a full collection every ~10 items, not every 3-4 (docs/performance.md).
	// More lanes: a download overlaps the other lanes' generations.
	const later = lanes === 1 && items.length > 1 ? new Map<number, Finish>() : undefined;
	const paid: string[] = [];
	try {
		const output = await eachItem(
			this,
			items,
			async (itemIndex) => {
				const plan = plans[itemIndex];
				if (plan instanceof Error) throw plan;
				const { paid: label, finish } = await generateItem(run, itemIndex, plan);
				if (label) paid.push(label);
				if (!later) return await finish();
				later.set(itemIndex, finish);
				return [];
			},
			lanes,
		);
		hintReplayed(this, run.replayed);
		return later ? await finishLater(this, items, output, later) : output;
	} catch (error) {
		throw withPaidNote(this, error, paid);
	}
}
