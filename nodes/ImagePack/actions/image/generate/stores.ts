/**
 * The two memories the item sequence (execute.ts) reads, in one vocabulary (`Outcome`). Pure: the
 * caller hands in the store object and the clock; no n8n, no timers.
 *
 * - `RunMemory`, per execution: one record per item of the node's latest run (of every run when the
 *   runs are AI Agent 3.x tool calls, which may overlap: recall.ts `openMemory`), and the count of
 *   identical asks so far (identity.ts), in the node's execution context data.
 * - `PendingGenerations`, per n8n process (the main, or the queue-mode worker that ran the call): per
 *   generation its key (the workflow and node, the key's fingerprint, the request: never the API
 *   key), a random handle, when it started and
 *   settled, its outcome (the API's JSON, or the error; no binaries). An answer is held until
 *   collected or `doneTtlMs` after it settled, an uncertain failure `failedTtlMs`, a refusal not at
 *   all; at most `maxEntries` (the oldest settled go first, then the oldest running ones, whose
 *   requests go on). A restart forgets everything.
 */
import { randomBytes } from 'crypto';

import type { ErrorFacts } from '../../../shared/errors';
import type { AskCounts } from './identity';

/** What one generation came to. `A`: its answer; `F`: how a failure is kept (facts, or the error). */
export type Outcome<A, F> =
	| { kind: 'generated'; answer: A }
	/** Sent, and no clear answer came back: it may have run and been charged. */
	| { kind: 'uncertain'; failure: F }
	/** The service refused it (nothing charged), or it was never sent. */
	| { kind: 'refused'; failure: F };

// Per execution.

/** Key of the records in the node's execution context data (`getContext('node')`). */
export const MEMORY_KEY = 'imagePackGenerate';
/** Key of the execution's count of identical asks (identity.ts `occurrences`), beside the records. */
export const ASKED_KEY = 'imagePackAsked';
/** Key of the sizes of the ledger's two rows, counted once per execution (durable.ts `rows`). */
const ROWS_KEY = 'imagePackRows';
/** Key of the node's latest run start: which execution, which run, and whether it was cut off. */
const STARTED_KEY = 'imagePackStarted';
const TRIGGER_KEY = 'imagePackTrigger';

/** The node's latest run start, as the execution's context data keeps it. */
export interface Started {
	execution: string;
	run: number;
	/** The execution retries a run n8n stopped while this node ran (recall.ts `cutOff`). */
	cutOff: boolean;
	/** Retry On Fail's tries of this run so far, this one included. */
	tries?: number;
}

/** The counts before and after the run `run` of the node (and its AI Agent 3.x `calls`). */
interface AskLedger {
	run: number;
	calls: string;
	after: AskCounts;
	/**
	 * What this run changed: each of its asks' count before it (0: none). Not the whole count before
	 * the run: n8n saves the context data after every node with Save Execution Progress, so a loop of
	 * 10,000 products would save two maps of every ask at each batch.
	 */
	changed: AskCounts;
}

/** A paid answer as the transport returned it: the API's JSON, nothing downloaded. */
export interface StoredAnswer {
	body: Record<string, unknown>;
	status: number;
	requestId?: string;
	unreadable?: string;
}

/** The facts of a failed request, as `errorFacts` reads them: enough to report it again. */
export type StoredFailure = ErrorFacts & { reason: string };

/**
 * One item's record: what it came to, what was asked (`digest`), in which execution, and who asked
 * (`fingerprint`, the key's: a record made under another key is used only once the API confirms the
 * account, verdict.ts).
 */
export type Memo = Outcome<StoredAnswer, StoredFailure> & {
	digest: string;
	/** Which of the execution's identical asks it was (identity.ts); unset in records before it. */
	occurrence?: number;
	executionId: string;
	fingerprint?: string;
	/** An AI Agent 3.x tool call's id, when it was one. */
	call?: string;
	/** A refusal whose record could not be taken out (a busy database): its own send is no reason. */
	left?: true;
};

type RunRecords = Record<string, Memo>;

/** The values in the ledger's two rows: the node's paid sends, the workflow's keys and claims. */
export interface RowSizes {
	sends: number;
	keys: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The records of one run of the node, in `store[MEMORY_KEY][runIndex][itemIndex]`. */
export class RunMemory {
	private readonly runs: Record<string, RunRecords>;
	/** Other keys' fingerprints whose records the API confirmed as this account's, in this run. */
	readonly confirmed = new Set<string>();

	constructor(
		private readonly store: Record<string, unknown>,
		readonly runIndex: number,
		readonly executionId: string,
	) {
		const runs = store[MEMORY_KEY];
		this.runs = isRecord(runs) ? (runs as Record<string, RunRecords>) : {};
		store[MEMORY_KEY] = this.runs;
	}

	/**
	 * The identical asks the execution made before this run of the node: its earlier runs' (a try of
	 * the same run, or a retry of it, counts from where that run started). `calls`: the run's agent
	 * call ids, which tell another call apart from a try of the same one.
	 */
	askedBefore(calls = ''): AskCounts {
		const ledger = this.store[ASKED_KEY] as AskLedger | undefined;
		if (!isRecord(ledger) || !isRecord(ledger.after)) return {};
		const sameRun = ledger.run === this.runIndex && (ledger.calls ?? '') === calls;
		if (!sameRun) return ledger.after;
		if (!isRecord(ledger.changed)) return {};
		const before: AskCounts = { ...ledger.after };
		for (const [ask, count] of Object.entries(ledger.changed)) {
			if (count) before[ask] = count;
			else delete before[ask];
		}
		return before;
	}

	/** Keeps the counts of this run: the next run counts on from `after`. */
	asked(before: AskCounts, after: AskCounts, calls = ''): void {
		const changed: AskCounts = {};
		for (const [ask, count] of Object.entries(after)) {
			if (before[ask] !== count) changed[ask] = before[ask] ?? 0;
		}
		const ledger: AskLedger = { run: this.runIndex, calls, after, changed };
		this.store[ASKED_KEY] = ledger;
	}

	/**
	 * The node's latest run start. n8n saves the context data when an execution fails, and with Save
	 * Execution Progress when a node finishes, never in the middle of a node's run: a retry of a run
	 * n8n stopped in this node does not find that run's start.
	 */
	get started(): Started | undefined {
		const started = this.store[STARTED_KEY] as Started | undefined;
		return isRecord(started) && typeof started.run === 'number' ? started : undefined;
	}

	set started(started: Started | undefined) {
		this.store[STARTED_KEY] = started;
	}

	/**
	 * Before n8n 2.14, the digest of the trigger's items (recall.ts `triggerRun`), made once per
	 * execution: they do not change in it, and a loop's batch need not read them again (a webhook's
	 * 10,000 products are a megabyte of JSON).
	 */
	get trigger(): string | undefined {
		const kept = this.store[TRIGGER_KEY] as { execution?: unknown; digest?: unknown } | undefined;
		const mine = isRecord(kept) && kept.execution === this.executionId;
		return mine && typeof kept.digest === 'string' ? kept.digest : undefined;
	}

	set trigger(digest: string | undefined) {
		this.store[TRIGGER_KEY] = { execution: this.executionId, digest };
	}

	/** The values in the ledger's rows, as this execution first counted them. */
	get rows(): RowSizes | undefined {
		const rows = this.store[ROWS_KEY];
		return isRecord(rows) && typeof rows.sends === 'number'
			? (rows as unknown as RowSizes)
			: undefined;
	}

	set rows(rows: RowSizes | undefined) {
		this.store[ROWS_KEY] = rows as unknown as Record<string, unknown>;
	}

	/**
	 * An earlier run's record of the same ask (what, and by which key) in this execution that may have
	 * been charged.
	 */
	earlierUncertain(
		digest: string,
		fingerprint: string,
	): (Memo & { kind: 'uncertain' }) | undefined {
		for (const [run, records] of Object.entries(this.runs)) {
			if (Number(run) === this.runIndex) continue;
			for (const memo of Object.values(records)) {
				const same =
					memo.digest === digest &&
					memo.fingerprint === fingerprint &&
					memo.executionId === this.executionId;
				if (same && memo.kind === 'uncertain') return memo as Memo & { kind: 'uncertain' };
			}
		}
		return undefined;
	}

	/**
	 * Drops the records of earlier runs. A node's runs follow one another (n8n runs one node at a
	 * time), and a finished run is never run again, neither by Retry On Fail nor by a retried
	 * execution, which resumes at the failed run. Not for tool calls, which may overlap.
	 */
	forgetEarlierRuns(): void {
		for (const run of Object.keys(this.runs)) {
			if (Number(run) < this.runIndex) delete this.runs[run];
		}
	}

	recall(itemIndex: number): Memo | undefined {
		const memo = this.runs[this.runIndex]?.[itemIndex];
		return typeof memo === 'object' && memo !== null ? memo : undefined;
	}

	remember(
		itemIndex: number,
		asked: Pick<Memo, 'digest' | 'occurrence' | 'fingerprint' | 'call'>,
		outcome: Outcome<StoredAnswer, StoredFailure>,
	): void {
		const records = (this.runs[this.runIndex] ??= {});
		records[itemIndex] = { ...outcome, ...asked, executionId: this.executionId };
	}
}

// Per process.

// AI Agent 2.x calls of the latest executions in this process (recall.ts `openMemory`): the
// execution's records, each call a run of its own. Bounded: the least recently used goes.
const agentExecutions = new Map<string, Record<string, unknown>>();
const AGENT_EXECUTIONS_KEPT = 100;
let calls = 0;

/** The records of an execution's AI Agent 2.x calls in this process. */
export function agentCalls(executionId: string): Record<string, unknown> {
	const store = agentExecutions.get(executionId) ?? {};
	agentExecutions.delete(executionId);
	agentExecutions.set(executionId, store);
	if (agentExecutions.size > AGENT_EXECUTIONS_KEPT) {
		agentExecutions.delete(agentExecutions.keys().next().value!);
	}
	return store;
}

/** A run index of its own for each AI Agent 2.x call of this process. */
export function nextCall(): number {
	return calls++;
}

/** What this process counted of AI Agent 2.x calls, gone as if n8n had restarted (the tests'). */
export function forgetAgentCalls(): void {
	agentExecutions.clear();
}

export const PENDING_LIMITS = { maxEntries: 200, doneTtlMs: 60 * 60_000, failedTtlMs: 10 * 60_000 };

export interface Held<A> {
	key: string;
	handle: string;
	startedAt: number;
	settledAt?: number;
	outcome?: Outcome<A, unknown>;
	/** Never rejects. */
	done: Promise<Outcome<A, unknown>>;
	/** Called once when a caller got the answer (execute.ts lets the durable record's windows go then). */
	onCollect?: () => Promise<void>;
}

export class PendingGenerations<A> {
	private readonly held = new Map<string, Held<A>>();

	constructor(
		readonly limits = PENDING_LIMITS,
		private readonly now = () => Date.now(),
	) {}

	get size(): number {
		return this.held.size;
	}

	/**
	 * The generation held under `key`, or a new one that `start` sends (`failed`: how its error is
	 * kept). Synchronous from lookup to insert: two calls in the same instant share one request.
	 */
	join(
		key: string,
		start: () => Promise<A>,
		failed: (error: unknown) => Outcome<A, unknown>,
	): { held: Held<A>; joined: boolean } {
		this.sweep(0);
		const found = this.held.get(key);
		if (found) return { held: found, joined: true };
		this.sweep(1);
		const handle = `gen_${randomBytes(9).toString('hex')}`;
		const held = { key, handle, startedAt: this.now() } as Held<A>;
		held.done = start().then(
			(answer) => this.settle(held, { kind: 'generated', answer }),
			(error: unknown) => this.settle(held, failed(error)),
		);
		this.held.set(key, held);
		return { held, joined: false };
	}

	/**
	 * What a handle names, if it was made for `key` (this request, this key, this node), else what is
	 * held under `key`: `other` when the handle names a generation made for something else; never
	 * starts anything.
	 */
	find(handle: string, key: string): Held<A> | 'other' | undefined {
		this.sweep(0);
		for (const held of this.held.values()) {
			if (held.handle === handle) return held.key === key ? held : 'other';
		}
		return this.held.get(key);
	}

	/** A caller got it: an answer is handed out once (the same arguments then ask anew). */
	async collected(held: Held<A>): Promise<void> {
		if (held.outcome?.kind !== 'generated') return;
		this.drop(held);
		const collect = held.onCollect;
		held.onCollect = undefined;
		await collect?.();
	}

	private settle(held: Held<A>, outcome: Outcome<A, unknown>): Outcome<A, unknown> {
		held.outcome = outcome;
		held.settledAt = this.now();
		if (outcome.kind === 'refused') this.drop(held);
		return outcome;
	}

	private drop(held: Held<A>): void {
		if (this.held.get(held.key) === held) this.held.delete(held.key);
	}

	/** Drops what outlived its TTL, then the oldest until `room` more entries fit. */
	private sweep(room: number): void {
		const now = this.now();
		for (const held of [...this.held.values()]) {
			const ttl =
				held.outcome?.kind === 'generated' ? this.limits.doneTtlMs : this.limits.failedTtlMs;
			if (held.settledAt !== undefined && now - held.settledAt > ttl) this.drop(held);
		}
		while (this.held.size + room > this.limits.maxEntries) {
			const all = [...this.held.values()];
			this.drop(all.find((held) => held.outcome) ?? all[0]);
		}
	}
}
