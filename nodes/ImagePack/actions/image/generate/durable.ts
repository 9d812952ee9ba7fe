/**
 * The third lifetime beside stores.ts: a record of each paid send that survives n8n being killed.
 * n8n's deduplication store (`helpers.checkProcessedAndRecord`, scope `node`) is the one write a node
 * can make mid-run that is committed before the promise resolves (N8N-FACTS, seventh round); it keeps
 * MD5 hashes only, so a record says "this was recorded", never what it came to.
 *
 * What a value names (docs/retry.md says why):
 * - a send of a run (`sendValue`): the run's name — the token an *Executions → Retry* copies from
 *   the execution it retries and a new execution does not have (n8n 2.x), else the execution id
 *   (1.x: a queue job re-run keeps it, a retry does not) — the node's run index, the request's
 *   digest and its occurrence among identical requests of the run (two identical items are two
 *   sends; an upstream node that re-runs in another order does not move them);
 * - a tool call (`toolValues`): the request, in the current and the next window of `TOOL_WINDOW_MS`,
 *   so a repeat after a restart within one window finds its own; cleared once the caller has the
 *   answer;
 * - the user's Idempotency Key (`keyValue`): the key alone, for every execution until cleared.
 *
 * The store has no lock and reads and rewrites one row per scope on each call: the calls of one
 * process are put in one line per node (`inTurn`); two processes (queue-mode workers) writing the
 * same node's row in the same instant can still lose a record. Bounded (`durableBound`): each write
 * keeps the newest `keptEntries` values plus room for every value of the writing run, so a run never
 * pushes out its own records; older ones fall out. Each call reads and rewrites the whole row, so its
 * cost grows with the bound (docs/performance.md).
 */
import type { IExecuteFunctions } from 'n8n-workflow';

/** The newest values kept from before a run, and the most one item writes (send, key, resent). */
export const DURABLE_LIMITS = { keptEntries: 2_000, valuesPerItem: 3 };

/** The row's bound for a run of `items` items: the newest records before it, and all of its own. */
export function durableBound(items: number): number {
	return DURABLE_LIMITS.keptEntries + DURABLE_LIMITS.valuesPerItem * items;
}

/** How long a tool call's record answers a repeat: the hold window of a collected answer. */
export const TOOL_WINDOW_MS = 60 * 60_000;

const SCOPE = 'node';
interface StoreOptions {
	mode: 'entries';
	maxEntries: number;
}

/** The run as the durable record knows it: shared by a retry (2.x) or a queue re-run (1.x). */
export function runName(ctx: IExecuteFunctions): string {
	try {
		const execution = ctx.getWorkflowDataProxy(0).$execution as { resumeUrl?: unknown };
		const url = new URL(String(execution.resumeUrl ?? ''));
		const token = url.searchParams.get('signature');
		if (token) return `token ${token}`;
	} catch {
		// No resume URL (a context without workflow data): the execution id is the run.
	}
	return `execution ${ctx.getExecutionId?.() ?? ''}`;
}

export function sendValue(run: string, runIndex: number, digest: string, occurrence: number) {
	return `send ${run} ${runIndex} ${digest} ${occurrence}`;
}

/** That an uncertain send of the run, recorded by execution `from`, was sent again on the user's word. */
export function resentValue(send: string, from: string): string {
	return `resent ${from} ${send}`;
}

export function isResentValue(value: string): boolean {
	return value.startsWith('resent ');
}

export function keyValue(idempotencyKey: string): string {
	return `key ${idempotencyKey}`;
}

/** The current and the next window's value: a repeat within one window matches one of them. */
export function toolValues(digest: string, now: number): string[] {
	const window = Math.floor(now / TOOL_WINDOW_MS);
	return [window, window + 1].map((at) => `tool ${digest} ${at}`);
}

/** What one item's send is recorded under, as the run knows it (see the header). */
export interface SendAsk {
	asTool: boolean;
	run: string;
	runIndex: number;
	/** What is asked, with an agent's call id (`itemDigest`), and without it (`requestDigest`). */
	digest: string;
	requestOnly: string;
	occurrence: number;
	idempotencyKey: string;
	now: number;
	/** The execution whose uncertain record is resent (Resend Uncertain Generations), if one is. */
	resentFrom?: string;
}

/** The values one send claims: the run's send or the tool call's windows, and the user's key. */
export function sendValues(ask: SendAsk): { values: string[]; tool: string[] } {
	const key = ask.idempotencyKey ? [keyValue(ask.idempotencyKey)] : [];
	if (ask.asTool) return { values: key, tool: toolValues(ask.requestOnly, ask.now) };
	const send = sendValue(ask.run, ask.runIndex, ask.digest, ask.occurrence);
	const resent = ask.resentFrom === undefined ? [] : [resentValue(send, ask.resentFrom)];
	return { values: [send, ...key, ...resent], tool: [] };
}

interface DeduplicationHelpers {
	checkProcessedAndRecord(
		values: string[],
		scope: typeof SCOPE,
		options: StoreOptions,
	): Promise<{ new: string[]; processed: string[] }>;
	removeProcessed(values: string[], scope: typeof SCOPE, options: StoreOptions): Promise<void>;
}

// One line per node in this process: n8n's store reads and rewrites the node's row unlocked.
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

// Tool values this process is sending right now: a concurrent identical call is no interrupted one.
const sending = new Map<string, number>();

/** What an earlier attempt left under the claimed values, and how to let go of this claim. */
export interface Claim {
	/** Values that were recorded before this claim (by an attempt n8n did not finish, or a key used). */
	earlier: Set<string>;
	/**
	 * Removes what this claim recorded: `all` when nothing was charged (a refusal, a send not made),
	 * `tool` once a tool caller has its answer (the Idempotency Key stays used).
	 */
	release(what: 'all' | 'tool'): Promise<void>;
}

export class DurableRecord {
	private readonly helpers: Partial<DeduplicationHelpers>;
	private readonly line: string;
	private readonly options: StoreOptions;

	constructor(ctx: IExecuteFunctions) {
		this.helpers = ctx.helpers as unknown as Partial<DeduplicationHelpers>;
		this.line = `${ctx.getWorkflow().id ?? ''} ${ctx.getNode().id}`;
		this.options = { mode: 'entries', maxEntries: durableBound(ctx.getInputData().length) };
	}

	/**
	 * Records `values` before a send. A tool value this process is sending now does not count as
	 * earlier. `failed` says why the store could not be written (a colliding first insert, a busy
	 * database: tried once more); nothing may be sent then.
	 */
	async claim(values: string[], tool: string[] = []): Promise<Claim | { failed: string }> {
		const helpers = this.helpers;
		if (typeof helpers.checkProcessedAndRecord !== 'function') {
			return { failed: 'this n8n gives the node no deduplication store' };
		}
		const all = [...new Set([...values, ...tool])];
		const write = async () =>
			await inTurn(
				this.line,
				async () => await helpers.checkProcessedAndRecord!(all, SCOPE, this.options),
			);
		const result = await write()
			.catch(write)
			.catch((error: unknown) => ({ failed: (error as Error)?.message ?? String(error) }));
		if ('failed' in result) return result;
		const earlier = new Set(result.processed.filter((value) => !sending.has(value)));
		for (const value of tool) sending.set(value, (sending.get(value) ?? 0) + 1);
		const fresh = all.filter((value) => !earlier.has(value));
		let toolHeld = true;
		const letGoOfTool = () => {
			if (!toolHeld) return [];
			toolHeld = false;
			return tool.filter((value) => {
				const left = (sending.get(value) ?? 1) - 1;
				if (left > 0) sending.set(value, left);
				else sending.delete(value);
				return left <= 0 && !earlier.has(value);
			});
		};
		return {
			earlier,
			release: async (what) => {
				const mine = letGoOfTool();
				if (what === 'all') mine.push(...fresh.filter((value) => !tool.includes(value)));
				await this.forget(mine);
			},
		};
	}

	/** Removes values (a cleared Idempotency Key, a claim let go); a failure leaves them recorded. */
	async forget(values: string[]): Promise<void> {
		if (!values.length || typeof this.helpers.removeProcessed !== 'function') return;
		const helpers = this.helpers;
		await inTurn(
			this.line,
			async () => await helpers.removeProcessed!(values, SCOPE, this.options),
		).catch(() => {
			// Left recorded: a later retry reports the item uncertain instead of sending it. Safe.
		});
	}
}
