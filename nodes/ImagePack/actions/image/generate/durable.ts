/**
 * Where the ledger's values (ledger.ts) are written so that they survive n8n being killed: n8n's
 * deduplication store (`helpers.checkProcessedAndRecord`), the one write a node can make mid-run that
 * is committed before the promise resolves (docs/retry.md, "When n8n stops mid-run"). Two scopes:
 * scope `workflow` (the claims' row, shared by the workflow's nodes; `inClaimsRow`) holds each item's
 * claim, its `send` values (`again` for a resend) and its Idempotency Key's `key` and `open`; scope
 * `node` (the sends' row) holds the paid sends moved there, each plain execution's `began <run>` and
 * tool calls' windows (`tool`). It keeps MD5 hashes only: a value says "this was recorded", never
 * what it came to. What a found value means is the verdict's (verdict.ts).
 *
 * The store has no lock and reads and rewrites one row per scope on each call: the calls of one
 * process are put in one line per row (`inTurn`); two processes (queue-mode workers) writing the
 * same row in the same instant can still lose a record. Each call's cost grows with its row
 * (docs/performance.md), so a claim goes to a small row and paid sends move, in groups, to a large
 * one whose sends only a retry reads (`RECORD_LIMITS`); a plain execution's first node run writes
 * its one `began` value there.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { nodeName } from './identity';
import { type RowSizes, forgetAgentCalls } from './stores';
import { inClaimsRow, kindOf, ledger } from './ledger';

/**
 * The rows and their caps, in values. A claim is written to the workflow's row (`claims`), which it
 * shares with the Idempotency Keys (`key <node> …`): a claim costs a read and rewrite of a small row,
 * whatever the size of the batch. Once settled as paid, sends are moved in groups of `moveAt` to the
 * node's row (`sends`: a 10,000-item run and what runs beside it), whose sends a run reads only
 * when it is a retry (`open`). Beyond a cap n8n drops the oldest values; the claims row holds `keys`
 * keys whatever else it holds (`claims` more: those in flight and not yet moved), and a run that
 * finds a row full says so (`full`). A claim is written just before its own send, never ahead of
 * it: n8n killed leaves recorded but not sent at most the items whose claims had just been written.
 */
export const RECORD_LIMITS = {
	sends: 12_000,
	keys: 10_000,
	claims: 2_000,
	moveAt: 200,
	fullAt: 0.95,
};

/** Which row: the workflow's holds claims and keys, the node's the paid sends moved there. */
type Scope = 'node' | 'workflow';

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

// Tool windows and open keys claims of this process hold right now: found, they are no interrupted
// send (an identical call at the same moment, a twin row in flight).
const inFlight = new Map<string, number>();

// What the claim that first holds a key's open mark in an execution came to, until it settles: a
// twin row of the execution that finds the mark held waits for it (a refusal does not use a key up).
const keyOutcomes = new Map<string, Promise<Settled>>();

/** A value held by a claim of `execution`: counted as held, and as held by that execution. */
const heldBy = (execution: string, value: string) => `${execution}\u0000${value}`;

function hold(value: string, execution: string): void {
	for (const held of [value, heldBy(execution, value)]) {
		inFlight.set(held, (inFlight.get(held) ?? 0) + 1);
	}
}

function release(value: string, execution: string): void {
	for (const held of [value, heldBy(execution, value)]) {
		const left = (inFlight.get(held) ?? 1) - 1;
		if (left > 0) inFlight.set(held, left);
		else inFlight.delete(held);
	}
}

// Values delivered items let go and not yet taken out (`flush`), by node: a held generation is
// collected by a later node run than the one that claimed it.
const releasing = new Map<string, Record<Scope, string[]>>();

// Paid sends settled in this process and not yet moved to their node's row, by node.
const toMove = new Map<string, string[]>();

/**
 * Values a retry's asking recorded in the sends' row and could not take out (a busy database), by
 * node: not sends. A claim that sends one makes it a send again.
 */
const leftByAsking = new Map<string, Set<string>>();

/**
 * Runs this process opened (`open`), by run and execution: a run first opened here has nothing of
 * its own in the sends' row. Bounded: the oldest are asked again.
 */
const openedHere = new Set<string>();
const OPENED_KEPT = 10_000;

/** What this process holds of the record, gone as if n8n had restarted (the tests' fresh instance). */
export function forgetProcessRecords(): void {
	forgetAgentCalls();
	toMove.clear();
	releasing.clear();
	openedHere.clear();
	leftByAsking.clear();
	inFlight.clear();
	keyOutcomes.clear();
}

/** An outcome as the record settles it (stores.ts `Outcome` kinds, and a send that was not made). */
export type Settled = 'generated' | 'uncertain' | 'refused' | 'not sent';

/**
 * What a claim records: sends (the run's, or a send again), the Idempotency Key's values (the key,
 * its open mark), or a tool call's windows.
 */
export interface ClaimValues {
	sends: string[];
	/** Sends that other executions may claim too (identity.ts `witness`): kept while one holds them. */
	shared?: string[];
	key?: string[];
	windows: string[];
}

/** One item's claim: what was recorded before it, and how its values settle. */
export interface Claimed {
	/** Values recorded before this claim (windows and open keys a claim of this process holds excluded). */
	found: Set<string>;
	/**
	 * A twin row's claim (its key's open mark held by a claim of the same execution): what that
	 * claim comes to. Refused or not sent, the key is free again; claim anew.
	 */
	twinOf?: Promise<Settled>;
	/**
	 * After the outcome: a refusal, or a send not made, lets go of what this claim recorded; a
	 * generated or uncertain send keeps it (its send moves to the node's row later). Tool windows
	 * stop counting as in flight either way. True when a refusal's values could not be taken out.
	 */
	settle(outcome: Settled): Promise<boolean>;
	/**
	 * The caller has the answer: the key's open mark and a tool call's windows are queued to go (the
	 * Idempotency Key stays used), taken out by the next `flush`. Not `delivered` (n8n dropped the
	 * node run's output): they stay, only this process stops holding them.
	 */
	answered(delivered?: boolean): void;
}

export class DurableRecord {
	private readonly helpers: Partial<DeduplicationHelpers>;
	private readonly node: string;
	private readonly execution: string;
	private readonly lines: Record<Scope, string>;
	private readonly options: Record<Scope, StoreOptions> = {
		node: { mode: 'entries', maxEntries: RECORD_LIMITS.sends },
		workflow: { mode: 'entries', maxEntries: RECORD_LIMITS.keys + RECORD_LIMITS.claims },
	};
	/** Of a run that is a retry: which of its values the sends' row holds (`open`). */
	private moved = new Set<string>();
	/** Why the sends' row could not be read for a retry: nothing may be sent then. */
	private unreadable?: string;

	constructor(ctx: IExecuteFunctions) {
		this.execution = String(ctx.getExecutionId?.() ?? '');
		this.helpers = ctx.helpers as unknown as Partial<DeduplicationHelpers>;
		this.node = nodeName(ctx);
		this.lines = { node: this.node, workflow: `${ctx.getWorkflow().id ?? ''} ` };
	}

	private async call<T>(scope: Scope, work: (helpers: DeduplicationHelpers) => Promise<T>) {
		const helpers = this.helpers as DeduplicationHelpers;
		const once = async () => await inTurn(this.lines[scope], async () => await work(helpers));
		return await once().catch(once);
	}

	/**
	 * Before the run's first claim: may `run` have claimed before? Yes for an execution n8n started
	 * as a retry (`retry`); otherwise when another process claimed for it (a 1.x queue-mode worker
	 * running a stalled job again), asked once per run and execution in this process (one value in
	 * the sends' row, `began <run>`); a plain execution's later node runs (a loop's batches) ask
	 * nothing more. Then the node run asks which of its `values` (its items' sends) were moved to the
	 * sends' row: by recording them and taking the new ones out again, in one turn of the row's line
	 * (no other call of this process lands between, so nothing is trimmed), with room so that asking
	 * drops nothing. What could not be taken out is remembered (`leftByAsking`): a later ask of this
	 * process does not take it for a send.
	 */
	async open(
		run: string,
		executionId: string,
		values: string[],
		retry: boolean,
		claimsWave = 0,
	): Promise<void> {
		if (typeof this.helpers.checkProcessedAndRecord !== 'function' || !values.length) return;
		const here = `${run} ${executionId}`;
		const options = this.options.node;
		const helpers = this.helpers as DeduplicationHelpers;
		const twice = async <T>(work: () => Promise<T>) => await work().catch(work);
		try {
			if (!retry) {
				if (openedHere.has(here)) return;
				const { processed } = await this.call(
					'node',
					async () => await helpers.checkProcessedAndRecord([ledger.began(run)], 'node', options),
				);
				if (!processed.length) {
					openedHere.add(here);
					if (openedHere.size > OPENED_KEPT) openedHere.delete(openedHere.values().next().value!);
					return;
				}
			}
			// Sends this process settled and has not moved yet go first: the read then finds them
			// (another retry of the same execution may have sent them).
			await this.move([], true);
			const room = { ...options, maxEntries: options.maxEntries + values.length };
			const left = leftByAsking.get(this.node) ?? new Set<string>();
			this.moved = await inTurn(this.lines.node, async () => {
				const asked = await twice(
					async () => await helpers.checkProcessedAndRecord(values, 'node', room),
				);
				const notSent = [...asked.new, ...asked.processed.filter((value) => left.has(value))];
				if (notSent.length) {
					await twice(async () => await helpers.removeProcessed(notSent, 'node', options)).then(
						() => notSent.forEach((value) => left.delete(value)),
						() => notSent.forEach((value) => left.add(value)),
					);
				}
				return new Set(asked.processed.filter((value) => !notSent.includes(value)));
			});
			if (left.size) leftByAsking.set(this.node, left);
			else leftByAsking.delete(this.node);
			if (retry && claimsWave > 0) {
				const rest = values.filter((value) => !this.moved.has(value));
				for (let at = 0; at < rest.length; at += claimsWave) {
					for (const value of await this.inClaims(rest.slice(at, at + claimsWave))) {
						this.moved.add(value);
					}
				}
			}
		} catch (error) {
			this.unreadable = (error as Error)?.message ?? String(error);
		}
	}

	/**
	 * Which of `values` the claims' row holds, asked as a claim asks (recorded, the new ones taken
	 * out again in the same turn of the row's line): a wave at a time, so n8n killed in between
	 * leaves at most a wave recorded, as a wave of claims would.
	 */
	private async inClaims(values: string[]): Promise<string[]> {
		const helpers = this.helpers as DeduplicationHelpers;
		const options = this.options.workflow;
		const stored = values.map((value) => inClaimsRow(this.node, value));
		const processed = await inTurn(this.lines.workflow, async () => {
			const asked = await helpers.checkProcessedAndRecord(stored, 'workflow', options);
			if (asked.new.length) await helpers.removeProcessed(asked.new, 'workflow', options);
			return new Set(asked.processed);
		});
		return values.filter((_value, index) => processed.has(stored[index]));
	}

	/** A retry's send that its `open` found in the sends' row: it left before; no claim needed. */
	sentBefore(value: string): boolean {
		return this.moved.has(value);
	}

	/**
	 * Records an item's values before its send: sends, the key's values in the claims' row (one call
	 * with the lanes waiting beside it), a tool call's windows in the sends' row (calls are few and
	 * each window is kept an hour or two: never in the small row, where it would push keys out).
	 * Returns what was there before (or moved to the sends' row). `failed` says why the store could
	 * not be written (a colliding first insert, a busy database: tried once more); nothing may be
	 * sent then, and nothing this claim wrote is left behind.
	 */
	async claim({
		sends: own,
		shared = [],
		key = [],
		windows,
	}: ClaimValues): Promise<Claimed | { failed: string }> {
		if (typeof this.helpers.checkProcessedAndRecord !== 'function') {
			return { failed: 'this n8n gives the node no deduplication store' };
		}
		if (this.unreadable) return { failed: this.unreadable };
		const helpers = this.helpers as DeduplicationHelpers;
		const sends = [...own, ...shared];
		const inClaims = [...new Set([...sends, ...key])];
		const write = (scope: Scope) => async (values: string[]) =>
			await helpers.checkProcessedAndRecord(values, scope, this.options[scope]);
		const failed = (error: unknown) => ({ failed: (error as Error)?.message ?? String(error) });
		const atNode = windows.length
			? await recordInTurn(this.lines.node, windows, write('node')).catch(failed)
			: new Set<string>();
		if ('failed' in atNode) return atNode;
		const atClaims = inClaims.length
			? await recordInTurn(
					this.lines.workflow,
					inClaims.map((value) => inClaimsRow(this.node, value)),
					write('workflow'),
				).catch(failed)
			: new Set<string>();
		if ('failed' in atClaims) {
			await this.forget(
				windows.filter((value) => !atNode.has(value)),
				'node',
			);
			return atClaims;
		}
		const inRow = (value: string) => atClaims.has(inClaimsRow(this.node, value));
		const before = [
			...inClaims.filter((value) => inRow(value) || this.moved.has(value)),
			...windows.filter((value) => atNode.has(value)),
		];
		// A window or a shared send that a claim of this process still holds is no interrupted one
		// (an identical call at the same moment), nor is a key this execution opened (a twin row:
		// the key is used); none is let go by another claim's refusal. A key open by another
		// execution is open: its generation may be charged and not delivered here, and this
		// execution's twins of the row find it so too (it is not held here).
		const open = key.filter((value) => kindOf(value) === 'open');
		const execution = this.execution;
		const heldHere = (value: string) =>
			inFlight.has(kindOf(value) === 'open' ? heldBy(execution, value) : value);
		const found = new Set(before.filter((value) => !heldHere(value)));
		const twinOf = open.map((value) => keyOutcomes.get(heldBy(execution, value))).find(Boolean);
		const first = open.filter((value) => !found.has(value) && !heldHere(value));
		let outcomeIs: (outcome: Settled) => void = () => {};
		const outcomeOf = new Promise<Settled>((resolve) => (outcomeIs = resolve));
		for (const value of first) keyOutcomes.set(heldBy(execution, value), outcomeOf);
		const settled = (outcome: Settled) => {
			for (const value of first) {
				const at = heldBy(execution, value);
				if (keyOutcomes.get(at) === outcomeOf) keyOutcomes.delete(at);
			}
			outcomeIs(outcome);
		};
		const held = [...windows, ...shared, ...open.filter((value) => !found.has(value))];
		for (const value of held) hold(value, execution);
		for (const value of sends) leftByAsking.get(this.node)?.delete(value);
		const fresh = (values: string[], row: (value: string) => boolean) =>
			values.filter((value) => !row(value) && !inFlight.has(value));
		// Sends an attempt n8n did not finish left in the claims' row move once this claim saw them.
		const leftBefore = sends.filter(inRow);
		const holding = new Set(held);
		const letGo = (values: string[]) => {
			for (const value of values) if (holding.delete(value)) release(value, execution);
		};
		let answered = false;
		return {
			found,
			twinOf,
			settle: async (outcome) => {
				// An answered key stays open, and held, until its caller has the answer (`answered`).
				letGo(outcome === 'generated' ? [...windows, ...shared] : held);
				if (outcome === 'refused' || outcome === 'not sent') {
					answered = true;
					const released = await this.forget(fresh(inClaims, inRow));
					settled(outcome);
					await this.forget(
						fresh(windows, (value) => atNode.has(value)),
						'node',
					);
					await this.move(leftBefore);
					return !released;
				}
				settled(outcome);
				await this.move([...sends.filter((value) => !inRow(value)), ...leftBefore]);
				return false;
			},
			answered: (delivered = true) => {
				if (answered) return;
				answered = true;
				letGo(held);
				if (!delivered) return;
				// The key is used, no longer open; a window another call recorded before stays: that
				// call may still need it.
				this.release(open.filter((value) => !inFlight.has(value)));
				this.queued().node.push(
					...windows.filter((value) => !found.has(value) && !inFlight.has(value)),
				);
			},
		};
	}

	/**
	 * Queues paid sends for the node's row; every `moveAt` of them (all of them `now`) are written
	 * there in one call, then taken out of the claims' row in one more. A failure leaves them in the
	 * claims' row (still found) and queued for the next group.
	 */
	private async move(values: string[], now = false): Promise<void> {
		const queue = toMove.get(this.node) ?? [];
		toMove.set(this.node, queue);
		queue.push(...values);
		if (!queue.length || (queue.length < RECORD_LIMITS.moveAt && !now)) return;
		const group = queue.splice(0);
		try {
			await this.call(
				'node',
				async (helpers) => await helpers.checkProcessedAndRecord(group, 'node', this.options.node),
			);
		} catch {
			queue.push(...group);
			return;
		}
		await this.forget(group);
	}

	/** Queues a delivered item's open key to go (a replay of what an earlier attempt paid). */
	release(values: string[]): void {
		this.queued().workflow.push(...values);
	}

	private queued(): Record<Scope, string[]> {
		const queue = releasing.get(this.node) ?? { node: [], workflow: [] };
		releasing.set(this.node, queue);
		return queue;
	}

	/** Takes out what delivered items of the node queued (`answered`, `release`): one call per row. */
	async flush(): Promise<void> {
		const queue = releasing.get(this.node);
		releasing.delete(this.node);
		await this.forget(queue?.workflow ?? []);
		await this.forget(queue?.node ?? [], 'node');
	}

	/**
	 * Takes values out of a row (a claim let go, an answered key's open mark, sends moved, a tool
	 * call's windows), tried once more like a claim; a failure leaves them recorded: a later attempt
	 * then reports the item instead of sending it.
	 */
	private async forget(values: string[], scope: Scope = 'workflow'): Promise<boolean> {
		if (!values.length || typeof this.helpers.removeProcessed !== 'function') return true;
		const stored =
			scope === 'workflow' ? values.map((value) => inClaimsRow(this.node, value)) : values;
		return await this.call(scope, async (helpers) => {
			await helpers.removeProcessed(stored, scope, this.options[scope]);
			return true;
		}).catch(() => false);
	}

	/** How many values each row holds (one read each; the keys' only for a `keyed` run); 0 when not counted. */
	async rows(keyed: boolean): Promise<RowSizes> {
		const count = async (scope: Scope) => {
			if (typeof this.helpers.getProcessedDataCount !== 'function') return 0;
			return await this.call(
				scope,
				async (helpers) => await helpers.getProcessedDataCount(scope, this.options[scope]),
			).catch(() => 0);
		};
		return { sends: await count('node'), keys: keyed ? await count('workflow') : 0 };
	}

	/**
	 * What a run should be told of a full row (at `fullAt` of its cap): beyond it n8n drops the
	 * oldest values, so a stop long ago may be paid again (sends) or an old key generate again.
	 */
	static full({ sends, keys }: RowSizes, keyed: boolean): string[] {
		const at = (cap: number) => cap * RECORD_LIMITS.fullAt;
		const cap = (values: number) => values.toLocaleString('en-US');
		return [
			...(sends >= at(RECORD_LIMITS.sends)
				? [
						`The node's record of paid sends is full (${cap(RECORD_LIMITS.sends)} values in n8n's database): each new send pushes out the oldest, so a retry of an execution that n8n stopped long ago may pay again for its items (the Idempotency Key option is kept apart and holds).`,
					]
				: []),
			...(keyed && keys >= at(RECORD_LIMITS.keys + RECORD_LIMITS.claims)
				? [
						`The workflow's record of Idempotency Keys is full (${cap(RECORD_LIMITS.keys)} keys in n8n's database): each new key pushes out the oldest, so a product whose key was used long ago may be generated and paid again. Split a larger catalogue across workflows.`,
					]
				: []),
		];
	}
}
