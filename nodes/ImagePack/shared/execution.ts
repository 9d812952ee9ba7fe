/** Per-item execution helpers shared by the operations. */
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { executionCancelSignal } from './transport';
import { BOUNDS, ValidationIssue, numberOption } from './validate';

/**
 * Throws once the user stopped the execution (the editor's Stop, the REST API): no further item
 * starts. Continue On Fail does not apply, since there is nobody left to continue for.
 */
export function throwIfStopped(ctx: IExecuteFunctions, itemIndex: number): void {
	if (!executionCancelSignal(ctx)?.aborted) return;
	const error = new NodeOperationError(
		ctx.getNode(),
		`The execution was stopped: item ${itemIndex} and the items after it were not started`,
		{ itemIndex, description: 'Nothing was sent for these items.' },
	);
	Object.assign(error.context, { code: 'cancelled' });
	throw error;
}

/** The per-file size cap, one option for every operation that downloads. */
export const maxFileSizeOption: INodeProperties = {
	displayName: 'Max File Size (MB)',
	name: 'maxFileSizeMb',
	type: 'number',
	typeOptions: { minValue: 1, maxValue: 1024 },
	default: 200, // BOUNDS.maxFileSizeMb.fallback; the lint rule wants a literal here
	description: 'A downloaded file larger than this is stopped and reported as an error',
};

/** The checked Max File Size of an options collection, in bytes. */
export function maxFileBytes(options: unknown): number {
	const value = (options as { maxFileSizeMb?: unknown } | null | undefined)?.maxFileSizeMb;
	const megabytes = numberOption(
		'maxFileSizeMb',
		'Max File Size (MB)',
		value,
		BOUNDS.maxFileSizeMb,
	);
	return Math.floor(megabytes * 1024 * 1024);
}

/**
 * Runs `worker` over `inputs` with at most `limit` in flight; results keep the input order. After the
 * first failure no new work starts (work in flight finishes), then that failure is thrown.
 */
export async function mapWithConcurrency<T, R>(
	inputs: readonly T[],
	limit: number,
	worker: (input: T, index: number) => Promise<R>,
): Promise<R[]> {
	const results = new Array<R>(inputs.length);
	let next = 0;
	let failure: { error: unknown } | undefined;
	const lane = async () => {
		while (!failure && next < inputs.length) {
			const index = next++;
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

/** What the API told us about a failure, kept on the error's context by the transport. */
export interface ErrorFacts {
	code: string | null;
	httpStatus: number | null;
	requestId: string | null;
}

export function errorFacts(error: unknown): ErrorFacts {
	const context = ((error as { context?: IDataObject } | null | undefined)?.context ??
		{}) as IDataObject;
	return {
		code: typeof context.code === 'string' ? context.code : null,
		httpStatus:
			typeof context.httpStatus === 'number' && context.httpStatus > 0 ? context.httpStatus : null,
		requestId: typeof context.requestId === 'string' ? context.requestId : null,
	};
}

function errorMessage(error: unknown): string {
	const message = (error as { message?: unknown } | null | undefined)?.message;
	return typeof message === 'string' ? message : String(error);
}

/** The output item of a failed input item under Continue On Fail. */
export function errorItem(error: unknown, itemIndex: number): INodeExecutionData {
	return {
		json: { error: errorMessage(error), ...errorFacts(error) },
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
		const failure = new NodeOperationError(ctx.getNode(), `Item ${itemIndex}: ${error.message}`, {
			itemIndex,
			description: `Parameter "${error.parameter}" of item ${itemIndex}. Nothing was sent and no credits were used.`,
		});
		Object.assign(failure.context, { code: 'invalid_parameter', parameter: error.parameter });
		return failure;
	}
	return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/**
 * Runs `work` for each input item in order. Under Continue On Fail a failing item becomes an error
 * item and the others go on; otherwise the first failure stops the node.
 */
export async function eachItem(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	work: (itemIndex: number) => Promise<INodeExecutionData[]>,
): Promise<INodeExecutionData[]> {
	const output: INodeExecutionData[] = [];
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		throwIfStopped(ctx, itemIndex);
		try {
			output.push(...(await work(itemIndex)));
		} catch (error) {
			if (!ctx.continueOnFail()) throw asNodeError(ctx, error, itemIndex);
			output.push(errorItem(error, itemIndex));
		}
	}
	return output;
}
