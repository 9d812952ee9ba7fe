/**
 * The record of each paid send that survives n8n being killed: n8n's deduplication store
 * (`helpers.checkProcessedAndRecord`, scope `node`), the one write a node can make mid-run that is
 * committed before the promise resolves (N8N-FACTS, seventh round). It keeps MD5 hashes only: a
 * record says "this was recorded", never what it came to. The values are the item's identity's
 * (identity.ts); what a found value means is the verdict's (verdict.ts).
 *
 * The store has no lock and reads and rewrites one row per scope on each call: the calls of one
 * process are put in one line per row (`inTurn`); two processes (queue-mode workers) writing the
 * same row in the same instant can still lose a record. Each row has a hard cap (`RECORD_LIMITS`);
 * each call reads and rewrites the whole row, so its cost grows with the row (docs/performance.md).
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { nodeName } from './identity';

/**
 * The rows' hard caps, in values. The node's row holds its sends (one per item, a send again after a
 * retried execution's record, a tool call's two windows): 12,000 hold a 10,000-item run and what runs
 * beside it. Idempotency Keys live in the workflow's row, so sends never push them out. Beyond a cap
 * n8n drops the oldest values, and a run that finds its row full says so. From `claimAheadAt` values
 * on, a call costs enough (about 2 ms + 1 ms per 1,000 values) that a run writes each item's claim
 * while the item before it is being generated (execute.ts `claimAhead`).
 */
export const RECORD_LIMITS = { sends: 12_000, keys: 10_000, fullAt: 0.95, claimAheadAt: 4_000 };

/** Which row a value is kept in: keys in the workflow's (`key <node> …`), the rest in the node's. */
type Scope = 'node' | 'workflow';
const scopeOf = (value: string): Scope => (value.startsWith('key ') ? 'workflow' : 'node');

interface StoreOptions {
	mode: 'entries';
	maxEntries: number;
}

interface DeduplicationHelpers {
	checkProcessedAndRecord(
		values: string[],
		scope: Scope,
		options: StoreOptions,
	): Promise<{ new: string[]; processed: string[] }>;
	removeProcessed(values: string[], scope: Scope, options: StoreOptions): Promise<void>;
	getProcessedDataCount(scope: Scope, options: StoreOptions): Promise<number>;
}

// One line per row in this process: n8n's store reads and rewrites a row unlocked.
const lines = new Map<string, Promise<unknown>>();

async function inTurn<T>(line: string, work: () => Promise<T>): Promise<T> {
	const turn = (lines.get(line) ?? Promise.resolve()).then(work, work);
	const done = turn.then(
		() => {},
		() => {},
	);
	lines.set(line, done);
	void done.then(() => lines.get(line) === done && lines.delete(line));
	return await turn;
}

/** Claims waiting for their line's turn: one store call records them all (a group commit). */
interface Waiting {
	values: string[];
	resolve: (found: Set<string>) => void;
	reject: (error: unknown) => void;
}
const waiting = new Map<string, Waiting[]>();

/**
 * Records `values` in the line's next store call, with every claim that waits for it: at eight
 * lanes one call instead of eight. Within a call, claims count as made one after the other: a value
 * an earlier claim of the call recorded is found by a later one (two rows with one key). A failed
 * call (tried once more) fails every claim in it.
 */
async function recordInTurn(
	line: string,
	values: string[],
	write: (values: string[]) => Promise<{ processed: string[] }>,
): Promise<Set<string>> {
	let batch = waiting.get(line);
	const opens = batch === undefined;
	if (!batch) {
		batch = [];
		waiting.set(line, batch);
	}
	const claims = batch;
	const found = new Promise<Set<string>>((resolve, reject) =>
		claims.push({ values, resolve, reject }),
	);
	if (opens) {
		void inTurn(line, async () => {
			if (waiting.get(line) === claims) waiting.delete(line);
			const all = [...new Set(claims.flatMap((claim) => claim.values))];
			const attempt = async () => await write(all);
			try {
				const seen = new Set((await attempt().catch(attempt)).processed);
				for (const claim of claims) {
					claim.resolve(new Set(claim.values.filter((value) => seen.has(value))));
					for (const value of claim.values) seen.add(value);
				}
			} catch (error) {
				for (const claim of claims) claim.reject(error);
			}
		});
	}
	return await found;
}

// Tool windows this process is sending right now: a concurrent identical call is no interrupted one.
const sending = new Map<string, number>();

/** An outcome as the record settles it (stores.ts `Outcome` kinds, and a send that was not made). */
export type Settled = 'generated' | 'uncertain' | 'refused' | 'not sent';

/** One item's claim: what was recorded before it, and how its values settle. */
export interface Claimed {
	/** Values recorded before this claim (tool windows this process is sending now excluded). */
	found: Set<string>;
	/**
	 * After the outcome: a refusal, or a send not made, lets go of what this claim recorded; a
	 * generated or uncertain send keeps it. Tool windows stop counting as in flight either way.
	 */
	settle(outcome: Settled): Promise<void>;
	/** The caller has the answer: a tool call's windows go (the Idempotency Key stays used). */
	answered(): Promise<void>;
}

export class DurableRecord {
	private readonly helpers: Partial<DeduplicationHelpers>;
	private readonly lines: Record<Scope, string>;
	private readonly options: Record<Scope, StoreOptions> = {
		node: { mode: 'entries', maxEntries: RECORD_LIMITS.sends },
		workflow: { mode: 'entries', maxEntries: RECORD_LIMITS.keys },
	};

	constructor(ctx: IExecuteFunctions) {
		this.helpers = ctx.helpers as unknown as Partial<DeduplicationHelpers>;
		this.lines = { node: nodeName(ctx), workflow: `${ctx.getWorkflow().id ?? ''} ` };
	}

	/**
	 * Writes `values` to their rows, each row in its line; what was there before. When a row cannot
	 * be written, what the other row recorded is let go again, and the claim fails.
	 */
	private async record(values: string[]): Promise<Set<string>> {
		const helpers = this.helpers as DeduplicationHelpers;
		const byScope = (['node', 'workflow'] as const)
			.map((scope) => ({ scope, mine: values.filter((value) => scopeOf(value) === scope) }))
			.filter(({ mine }) => mine.length > 0);
		const results = await Promise.allSettled(
			byScope.map(
				async ({ scope, mine }) =>
					await recordInTurn(this.lines[scope], mine, async (values) => {
						const result = await helpers.checkProcessedAndRecord(
							values,
							scope,
							this.options[scope],
						);
						return { processed: result.processed };
					}).then((found) => ({ found, written: mine.filter((value) => !found.has(value)) })),
			),
		);
		const failed = results.find((result) => result.status === 'rejected');
		if (failed) {
			const written = results.flatMap((result) =>
				result.status === 'fulfilled' ? result.value.written : [],
			);
			await this.forget(written);
			throw failed.reason;
		}
		return new Set(
			results.flatMap((result) => (result.status === 'fulfilled' ? [...result.value.found] : [])),
		);
	}

	/**
	 * Records `values` (and a tool call's `windows`) before a send. `failed` says why the store could
	 * not be written (a colliding first insert, a busy database: tried once more); nothing may be
	 * sent then.
	 */
	async claim(values: string[], windows: string[] = []): Promise<Claimed | { failed: string }> {
		if (typeof this.helpers.checkProcessedAndRecord !== 'function') {
			return { failed: 'this n8n gives the node no deduplication store' };
		}
		const all = [...new Set([...values, ...windows])];
		const recorded = await this.record(all).catch((error: unknown) => ({
			failed: (error as Error)?.message ?? String(error),
		}));
		if ('failed' in recorded) return recorded;
		const found = new Set([...recorded].filter((value) => !sending.has(value)));
		for (const value of windows) sending.set(value, (sending.get(value) ?? 0) + 1);
		const fresh = all.filter((value) => !found.has(value));
		let inFlight = true;
		const landed = () => {
			if (!inFlight) return;
			inFlight = false;
			for (const value of windows) {
				const left = (sending.get(value) ?? 1) - 1;
				if (left > 0) sending.set(value, left);
				else sending.delete(value);
			}
		};
		let windowsHeld = windows.length > 0;
		return {
			found,
			settle: async (outcome) => {
				landed();
				if (outcome === 'refused' || outcome === 'not sent') {
					windowsHeld = false;
					// A window an identical call in flight also holds stays until that call settles.
					await this.forget(fresh.filter((value) => !sending.has(value)));
				}
			},
			answered: async () => {
				if (!windowsHeld) return;
				windowsHeld = false;
				// A window another call recorded before stays: that call may still need it.
				await this.forget(windows.filter((value) => !found.has(value) && !sending.has(value)));
			},
		};
	}

	/**
	 * Removes values (a cleared Idempotency Key, a claim let go), tried once more like a claim; a
	 * failure leaves them recorded: a later attempt then reports the item instead of sending it.
	 */
	async forget(values: string[]): Promise<void> {
		const helpers = this.helpers;
		if (!values.length || typeof helpers.removeProcessed !== 'function') return;
		const rows = (['node', 'workflow'] as const).map(async (scope) => {
			const mine = values.filter((value) => scopeOf(value) === scope);
			if (!mine.length) return;
			const remove = async () =>
				await inTurn(
					this.lines[scope],
					async () => await helpers.removeProcessed!(mine, scope, this.options[scope]),
				);
			await remove()
				.catch(remove)
				.catch(() => {});
		});
		await Promise.all(rows);
	}

	/** How many values the node's row holds (one read of the row); 0 when it cannot be counted. */
	async size(): Promise<number> {
		const helpers = this.helpers;
		if (typeof helpers.getProcessedDataCount !== 'function') return 0;
		return await inTurn(
			this.lines.node,
			async () => await helpers.getProcessedDataCount!('node', this.options.node),
		).catch(() => 0);
	}
}
