/**
 * A stand-in for n8n's deduplication store, which the node uses as its durable record of paid sends
 * (durable.ts). n8n's own (`DeduplicationHelper` in the `n8n` package, over the `processed_data`
 * table) needs n8n's database and cannot run in jest, so this one keeps its semantics: one row per
 * workflow and scope context (`n:<node id>`), MD5 hashes of the values, `maxEntries` drops the
 * oldest, `removeProcessed` splices, and every call reads the row, awaits, then rewrites it without a
 * lock — so overlapping calls lose entries exactly as n8n's can. Claims that must hold in n8n itself
 * (a kill, two processes) are tested in a real n8n (test/e2e/crash.test.mjs).
 */
import { createHash } from 'crypto';
import { DataDeduplicationService } from 'n8n-core';
import type { ICheckProcessedContextData, ICheckProcessedOptions } from 'n8n-workflow';

import { forgetProcessRecords } from '../../nodes/ImagePack/actions/image/generate/durable';

type Scope = 'node' | 'workflow';

const rows = new Map<string, string[]>();
/** Calls made, for tests that count the store's round trips; `failNext`: calls that throw, as a busy database does. */
export const storeCalls = { record: 0, remove: 0, failNext: 0 };

function rowKey(scope: Scope, { workflow, node }: ICheckProcessedContextData): string {
	if (!workflow.id) throw new Error('The workflow must be saved (it has no id)'); // n8n asserts it
	return `${workflow.id} ${scope === 'node' ? `n:${node?.id ?? ''}` : ''}`;
}

const hash = (value: string) => createHash('md5').update(value.toString()).digest('base64');

/** The gap between reading a row and writing it back, where n8n's database round trip is. */
const roundTrip = async () => await Promise.resolve();

/** One call to the store, as a hook sees it. */
export interface StoreCall {
	kind: 'record' | 'remove' | 'count';
	scope: Scope;
	values: string[];
}

/**
 * Called around every store call, for a scheduler (test/model): `before` the row is read (throw to
 * fail the call as a busy database does, or await to hold it there), `after` it is written (await to
 * hold the caller there: never resolving stands for n8n killed once the write was committed). None
 * by default: the store behaves as before.
 */
export type StoreHook = (call: StoreCall, phase: 'before' | 'after') => void | Promise<void>;
let hook: StoreHook | undefined;

export function setStoreHook(next: StoreHook | undefined): void {
	hook = next;
}

const standIn = {
	async checkProcessedAndRecord(
		items: string[],
		scope: Scope,
		context: ICheckProcessedContextData,
		options: ICheckProcessedOptions,
	) {
		storeCalls.record++;
		const key = rowKey(scope, context);
		if (storeCalls.failNext > 0) {
			storeCalls.failNext--;
			throw new Error('SQLITE_BUSY: database is locked');
		}
		const call: StoreCall = { kind: 'record', scope, values: items };
		if (hook) await hook(call, 'before');
		const data = [...(rows.get(key) ?? [])];
		await roundTrip();
		const seen = new Set(data);
		const result = { new: [] as string[], processed: [] as string[] };
		for (const item of items) {
			if (seen.has(hash(item))) result.processed.push(item);
			else {
				result.new.push(item);
				data.push(hash(item));
			}
		}
		if (options.maxEntries) data.splice(0, data.length - options.maxEntries);
		rows.set(key, data);
		if (hook) await hook(call, 'after');
		return result;
	},
	async removeProcessed(items: string[], scope: Scope, context: ICheckProcessedContextData) {
		storeCalls.remove++;
		const key = rowKey(scope, context);
		const call: StoreCall = { kind: 'remove', scope, values: items };
		if (hook) await hook(call, 'before');
		const data = [...(rows.get(key) ?? [])];
		await roundTrip();
		for (const value of items.map(hash)) {
			const index = data.indexOf(value);
			if (index !== -1) data.splice(index, 1);
		}
		rows.set(key, data);
		if (hook) await hook(call, 'after');
	},
	async clearAllProcessedItems(scope: Scope, context: ICheckProcessedContextData) {
		rows.delete(rowKey(scope, context));
	},
	async getProcessedDataCount(scope: Scope, context: ICheckProcessedContextData) {
		const call: StoreCall = { kind: 'count', scope, values: [] };
		if (hook) await hook(call, 'before');
		const count = rows.get(rowKey(scope, context))?.length ?? 0;
		if (hook) await hook(call, 'after');
		return count;
	},
	async checkProcessedItemsAndRecord(): Promise<never> {
		throw new Error('not used by this package');
	},
};

/** Installs the stand-in once per module registry (jest gives each test file its own). */
export function installDeduplicationStore(): void {
	try {
		DataDeduplicationService.getInstance();
	} catch {
		void DataDeduplicationService.init(standIn as never);
	}
}

/** Forgets every row (between tests that must not see each other's records). */
export function clearDeduplicationStore(): void {
	rows.clear();
	forgetProcessRecords(); // a new n8n instance is a new process
	storeCalls.failNext = 0;
	hook = undefined;
}

/** The stand-in itself, for the test that shows it races as n8n's store does. */
export const deduplicationStandIn = standIn;

/** The number of values in the workflow's row: the node's claims and Idempotency Keys. */
export function claimedCount(workflowId = 'test-workflow'): number {
	return rows.get(`${workflowId} `)?.length ?? 0;
}

/** The number of values recorded for the harness's node (`n:node-under-test`). */
export function recordedCount(workflowId = 'test-workflow', nodeId = 'node-under-test'): number {
	return rows.get(`${workflowId} n:${nodeId}`)?.length ?? 0;
}
