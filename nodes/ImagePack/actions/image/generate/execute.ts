/**
 * Generate's run: every item is checked before the first request, so a bad row in a batch costs
 * nothing and stops nothing half-way; requests then run with bounded concurrency on the shared item
 * loop, output in input order. Each item: reserve its estimate under the execution's credit cap,
 * generate, settle the ledger with what was charged, read the answer, download the images.
 */
import type { IBinaryData, IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { chargeHint, errorFacts, imagePackError } from '../../../shared/errors';
import { asNodeError, eachItem } from '../../../shared/execution';
import { ExecutionLedger, runsAsTool } from '../../../shared/tool';
import {
	type Answer,
	type Connection,
	downloadBinary,
	generate,
	getConnection,
} from '../../../transport';
import { type GeneratedImage, type GenerateResponse, type ReadAnswer, readAnswer } from './answer';
import { heldAnswer, reserveHourly } from './held';
import { addImageLinks } from './links';
import type { RunMemory } from './memory';
import { type ItemPlan, planItem } from './options';
import { answerFor, openMemory } from './retry';

/** What every item of one node run shares. */
interface Run {
	ctx: IExecuteFunctions;
	connection: Connection;
	asTool: boolean;
	ledger: ExecutionLedger;
	memory: RunMemory;
	/** Items answered from the memory instead of being sent. */
	replayed: number[];
}

/** Sends the generation; the ledger ends up holding what it cost (its estimate while unknown). */
async function sendGeneration(run: Run, itemIndex: number, { request, options }: ItemPlan) {
	const { ctx, connection, ledger } = run;
	const estimate = request.creditsEstimated;
	// The hourly cap first: it holds across executions and tool calls (held.ts).
	const settleHour = reserveHourly(ctx, itemIndex, estimate, options.maxCreditsPerHour);
	const settle = (charged: number) => {
		ledger.settle(estimate, charged);
		settleHour(charged);
	};
	const cap = options.maxCreditsPerExecution;
	if (!ledger.reserve(estimate, cap)) {
		settleHour(0);
		throw imagePackError(
			ctx.getNode(),
			{ code: 'credit_cap_reached', charge: 'not_sent', itemIndex },
			{
				message: `The credit cap of this workflow run is reached: ${ledger.spent} of ${cap} credits (Max Credits per Execution) are already spent or reserved, and this request could cost ${estimate} more`,
				description: `Nothing was sent and no credits were used. Raise Max Credits per Execution (now ${cap}) to allow more.`,
			},
		);
	}
	let answer: Answer<GenerateResponse>;
	try {
		const { acceptLanguage, timeoutMs } = options;
		const call = { itemIndex, acceptLanguage, timeoutMs };
		answer = await generate<GenerateResponse>(ctx, connection, { ...request.body }, call);
	} catch (error) {
		settle(errorFacts(error).charge === 'may_have_been_charged' ? estimate : 0);
		throw asNodeError(ctx, error, itemIndex);
	}
	const charged = Number(answer.body.credits_charged);
	settle(Number.isFinite(charged) ? charged : estimate);
	return answer;
}

/** The item's JSON: the answer as returned plus what the node adds; hints for what differs. */
function resultOf(
	{ ctx, ledger }: Run,
	itemIndex: number,
	{ request, options }: ItemPlan,
	answer: Answer<GenerateResponse>,
	read: ReadAnswer,
): IDataObject {
	const result: IDataObject = {
		...answer.body,
		request_id: answer.requestId ?? null,
		credits_estimated: request.creditsEstimated,
	};
	const cap = options.maxCreditsPerExecution;
	if (cap > 0) {
		result.credit_budget = { cap, spent: ledger.spent, remaining: Math.max(0, cap - ledger.spent) };
	}
	const hints = read.warnings.map(
		(warning) =>
			`Item ${itemIndex}: ${String(warning.type)} ${String(warning.feature)}: ${String(warning.details ?? '')}`,
	);
	if (read.problems.length) {
		// The service said 2xx, so the credits are gone: the item stays, with what went wrong.
		result.answer_problems = read.problems;
		result.session_id ??= request.body.session_id ?? null;
		hints.push(
			`Item ${itemIndex}: the generation answer was not as documented (${read.problems.join('; ')}). ${chargeHint(request.body.session_id)}`,
		);
	}
	if (hints.length && typeof ctx.addExecutionHints === 'function') {
		ctx.addExecutionHints(
			...hints.map((message) => ({ message, location: 'outputPane' as const })),
		);
	}
	return result;
}

/** The images are paid for: a failed download is reported on the item, never thrown. */
async function downloadImages(
	{ ctx, connection, asTool }: Run,
	itemIndex: number,
	{ options }: ItemPlan,
	images: GeneratedImage[],
	result: IDataObject,
): Promise<Array<IBinaryData | undefined>> {
	const binaries: Array<IBinaryData | undefined> = [];
	// An agent sees JSON only: as a tool, images are downloaded only when the user asks for it.
	if (!(options.downloadImages ?? !asTool)) return binaries;
	const errors: IDataObject[] = [];
	for (const [index, image] of images.entries()) {
		try {
			binaries[index] = await downloadBinary(ctx, connection, image.url, {
				itemIndex,
				fileName: typeof image.filename === 'string' ? image.filename : undefined,
				maxBytes: options.maxFileBytes,
			});
		} catch (error) {
			errors.push({ index, url: image.url, error: (error as Error).message });
		}
	}
	if (errors.length) result.download_errors = errors;
	return binaries;
}

/** One item per request (binaries image_0 …), or with One Item per Image one per image (binary data). */
function outputItems(
	itemIndex: number,
	result: IDataObject,
	images: GeneratedImage[],
	binaries: Array<IBinaryData | undefined>,
	splitImages: boolean,
): INodeExecutionData[] {
	if (splitImages) {
		const links = Array.isArray(result.image_links) ? (result.image_links as unknown[]) : undefined;
		const shared = { ...result };
		delete shared.images;
		delete shared.image_links;
		return images.map((image, index) => ({
			json: {
				...shared,
				image: image as unknown as IDataObject,
				image_index: index,
				...(links && { image_link: links[index] ?? null }), // the image's own link
			},
			binary: binaries[index] ? { data: binaries[index]! } : undefined,
			pairedItem: { item: itemIndex },
		}));
	}
	const binary: Record<string, IBinaryData> = {};
	binaries.forEach((data, index) => {
		if (data) binary[`image_${index}`] = data;
	});
	return [
		{
			json: result,
			binary: Object.keys(binary).length ? binary : undefined,
			pairedItem: { item: itemIndex },
		},
	];
}

/** What is left of an item once its generation is answered: downloads, links, output items. */
type Finish = () => Promise<INodeExecutionData[]>;

/** Generates an item; `turn` is what was paid for, `finish` the rest of the item. */
async function generateItem(
	run: Run,
	itemIndex: number,
	plan: ItemPlan,
): Promise<{ turn: unknown; finish: Finish }> {
	const { ctx, memory, replayed } = run;
	const send = async () => await sendGeneration(run, itemIndex, plan);
	// As a tool with an answer bound, the generation is held by the process (held.ts).
	const bound = run.asTool ? plan.options.answerWithinMs : undefined;
	const answer =
		bound !== undefined
			? await heldAnswer(ctx, itemIndex, plan, run.connection, bound, send)
			: await answerFor(ctx, itemIndex, plan, memory, replayed, send);
	if ('running' in answer) {
		const running = [{ json: answer.running, pairedItem: { item: itemIndex } }];
		return { turn: answer.running.turn_id, finish: async () => running };
	}
	const read = answer.unreadable
		? { images: [], warnings: [], problems: [answer.unreadable] }
		: readAnswer(answer.body, plan.request.body.n);
	const result = resultOf(run, itemIndex, plan, answer, read);
	const finish = async () => {
		const binaries = await downloadImages(run, itemIndex, plan, read.images, result);
		// Links when the option says so, otherwise only as an agent's tool.
		if (plan.options.imageLinks ?? run.asTool) {
			await addImageLinks(ctx, run.connection, itemIndex, read.images, result);
		}
		return outputItems(itemIndex, result, read.images, binaries, plan.options.splitImages);
	};
	return { turn: result.turn_id, finish };
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

/** Says which items came from an earlier try instead of a request. */
function hintReplayed(ctx: IExecuteFunctions, replayed: number[]) {
	if (!replayed.length || typeof ctx.addExecutionHints !== 'function') return;
	const items = [...replayed].sort((a, b) => a - b).join(', ');
	ctx.addExecutionHints({
		message: `${replayed.length === 1 ? 'Item' : 'Items'} ${items}: generated by an earlier try (Retry On Fail, or the execution this one retries) and returned again without being sent or charged again.`,
		location: 'outputPane',
	});
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
	const run: Run = {
		ctx: this,
		connection: await getConnection(this),
		asTool,
		ledger: new ExecutionLedger(this),
		memory: openMemory(this, asTool),
		replayed: [],
	};
	const plans = items.map((_item, itemIndex): ItemPlan | Error => {
		try {
			return planItem(this, itemIndex);
		} catch (error) {
			if (!continueOnFail) throw asNodeError(this, error, itemIndex);
			return error as Error;
		}
	});
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
				const { turn, finish } = await generateItem(run, itemIndex, plan);
				if (turn) paid.push(String(turn));
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
