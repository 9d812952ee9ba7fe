/**
 * The operations' item loop: bounded concurrency in input order, Stop between items, Continue On
 * Fail (a failed item becomes an error item), and errors that name their item.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { errorFacts, errorMessage, factFields, imagePackError } from '../shared/errors';
import { ValidationIssue } from '../shared/parameters';
import { executionCancelSignal } from '../transport';

/**
 * Throws once the user stopped the execution (the editor's Stop, the REST API): no further item
 * starts. Continue On Fail does not apply, since there is nobody left to continue for.
 */
export function throwIfStopped(ctx: IExecuteFunctions, itemIndex: number): void {
	if (!executionCancelSignal(ctx)?.aborted) return;
	throw imagePackError(
		ctx.getNode(),
		{ code: 'cancelled', charge: 'not_sent', itemIndex },
		{
			message: `The execution was stopped: item ${itemIndex} and the items after it were not started`,
			description: 'Nothing was sent for these items.',
		},
	);
}

/** Shows `messages` in the output pane, where this n8n has execution hints. */
export function addHints(ctx: IExecuteFunctions, messages: string[]): void {
	if (!messages.length || typeof ctx.addExecutionHints !== 'function') return;
	ctx.addExecutionHints(
		...messages.map((message) => ({ message, location: 'outputPane' as const })),
	);
}

/** Reads an item's parameters: a bad value fails naming the item, also under Continue On Fail. */
export function itemParameters<T>(ctx: IExecuteFunctions, itemIndex: number, read: () => T): T {
	try {
		return read();
	} catch (error) {
		throw asNodeError(ctx, error, itemIndex);
	}
}

/**
 * Runs `worker` over `inputs` with at most `limit` in flight; results keep the input order. After the
 * first failure no new work starts (work in flight finishes), then that failure is thrown.
 */
export async function mapWithConcurrency<T, R>(
	inputs: readonly T[],
	limit: number,
	worker: (input: T, index: number) => Promise<R>,
	order?: readonly number[],
): Promise<R[]> {
	const results = new Array<R>(inputs.length);
	let next = 0;
	let failure: { error: unknown } | undefined;
	const lane = async () => {
		while (!failure && next < inputs.length) {
			const index = order ? order[next++] : next++;
			try {
				results[index] = await worker(inputs[index], index);
			} catch (error) {
				failure ??= { error };
			}
		}
	};
	// `limit || 1`: a NaN limit (an expression gone wrong) would otherwise start no lane at all.
	await Promise.all(Array.from({ length: Math.max(1, Math.min(limit || 1, inputs.length)) }, lane));
	if (failure) throw failure.error;
	return results;
}

/**
 * The output item of a failed input item under Continue On Fail, in the one shape every n8n from
 * 1.100 on routes to the error output with its facts: `json` is `{ error: { message, ...facts } }`.
 * Before n8n 2.36 only a `json` of exactly `{error}` (or `{error, message}`) is routed; setting the
 * item's own `error` would make n8n replace `json` by the bare message. `charge` says what the
 * failure cost; `sessionId` is where to check a generation that may have been charged (null: the
 * newest "API generation" session).
 */
export function errorItem(error: unknown, itemIndex: number): INodeExecutionData {
	return {
		json: { error: { message: errorMessage(error), ...factFields(errorFacts(error)) } },
		pairedItem: { item: itemIndex },
	};
}

/**
 * n8n errors pass through as they are; a bad parameter value becomes an error naming the item, the
 * parameter and the allowed values; anything unexpected is wrapped with the item it belongs to.
 */
export function asNodeError(
	ctx: IExecuteFunctions,
	error: unknown,
	itemIndex?: number,
): NodeApiError | NodeOperationError {
	if (error instanceof NodeApiError || error instanceof NodeOperationError) return error;
	if (error instanceof ValidationIssue && itemIndex !== undefined) {
		const { parameter, message } = error;
		return imagePackError(
			ctx.getNode(),
			{ code: 'invalid_parameter', parameter, charge: 'not_sent', itemIndex },
			{
				message,
				description: `Parameter "${parameter}" of item ${itemIndex}. Nothing was sent and no credits were used.`,
				namesItem: true,
			},
		);
	}
	return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/**
 * Runs `work` for each input item, at most `concurrency` at once (default: one after the other, as
 * n8n does); output in input order. Under Continue On Fail a failing item becomes an error item and
 * the others go on, and the items may be taken up in another `order` (a permutation of the indexes);
 * otherwise the first failure stops the node (work in flight finishes), in input order. After a Stop
 * no item starts, unless the caller checks it itself (`stopBetweenItems` off: Generate, whose paid
 * items finish or are reported).
 */
export async function eachItem(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	work: (itemIndex: number) => Promise<INodeExecutionData[]>,
	concurrency = 1,
	order?: readonly number[],
	stopBetweenItems = true,
): Promise<INodeExecutionData[]> {
	const continueOnFail = ctx.continueOnFail();
	const outputs = await mapWithConcurrency(
		items,
		concurrency,
		async (_item, itemIndex) => {
			if (stopBetweenItems) throwIfStopped(ctx, itemIndex);
			try {
				return await work(itemIndex);
			} catch (error) {
				if (!continueOnFail) throw asNodeError(ctx, error, itemIndex);
				return [errorItem(error, itemIndex)];
			}
		},
		continueOnFail ? order : undefined,
	);
	return outputs.flat();
}
