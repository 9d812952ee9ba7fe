/**
 * The two stores replay.ts reads, side by side, in one vocabulary (`Outcome`). Pure: the caller hands
 * in the store object and the clock; no n8n, no timers.
 *
 * - `RunMemory`, per execution: one record per item in the node's execution context data.
 * - `PendingGenerations`, per n8n process (the main, or the queue-mode worker that ran the call): per
 *   generation its key (the workflow and node, the key's fingerprint, the request: never the API
 *   key), a random handle, when it started and
 *   settled, its outcome (the API's JSON, or the error; no binaries). An answer is held until
 *   collected or `doneTtlMs` after it settled, an uncertain failure `failedTtlMs`, a refusal not at
 *   all; at most `maxEntries` (the oldest settled go first, then the oldest running ones, whose
 *   requests go on). A restart forgets everything.
 */
import { createHash, randomBytes } from 'crypto';

import type { ErrorFacts } from '../../../shared/errors';

/** What one generation came to. `A`: its answer; `F`: how a failure is kept (facts, or the error). */
export type Outcome<A, F> =
	| { kind: 'generated'; answer: A }
	/** Sent, and no clear answer came back: it may have run and been charged. */
	| { kind: 'uncertain'; failure: F }
	/** The service refused it (nothing charged), or it was never sent. */
	| { kind: 'refused'; failure: F };

/** JSON with sorted keys, so that the digest does not depend on the order a body was built in. */
function canonical(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
	if (typeof value === 'object' && value !== null) {
		const entries = Object.entries(value as Record<string, unknown>)
			.filter(([, child]) => child !== undefined)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonical(child)}`).join(',')}}`;
	}
	return JSON.stringify(value) ?? 'null';
}

/**
 * What was asked: the request body, and who asks (`asker`). 16 hex digits: one run holds a few
 * thousand items at most, so a 64-bit digest cannot collide by chance.
 */
export function requestDigest(body: object, asker = ''): string {
	return createHash('sha256').update(canonical({ body, asker })).digest('hex').slice(0, 16);
}

// Per execution.

/** Key of the records in the node's execution context data (`getContext('node')`). */
export const MEMORY_KEY = 'imagePackGenerate';

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
 * account, replay.ts).
 */
export type Memo = Outcome<StoredAnswer, StoredFailure> & {
	digest: string;
	executionId: string;
	fingerprint?: string;
	/** An AI Agent 3.x tool call's id, when it was one. */
	call?: string;
};

type RunRecords = Record<string, Memo>;

/** The records of one run of the node, in `store[MEMORY_KEY][runIndex][itemIndex]`. */
export class RunMemory {
	private readonly runs: Record<string, RunRecords>;
	/** Other keys' fingerprints whose records the API confirmed as this account's, in this run. */
	readonly confirmed = new Set<string>();

	constructor(
		store: Record<string, unknown>,
		private readonly runIndex: number,
		readonly executionId: string,
	) {
		const runs = store[MEMORY_KEY];
		this.runs =
			typeof runs === 'object' && runs !== null && !Array.isArray(runs)
				? (runs as Record<string, RunRecords>)
				: {};
		store[MEMORY_KEY] = this.runs;
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
		asked: { digest: string; fingerprint: string; call?: string },
		outcome: Outcome<StoredAnswer, StoredFailure>,
	): void {
		const records = (this.runs[this.runIndex] ??= {});
		records[itemIndex] = { ...outcome, ...asked, executionId: this.executionId };
	}
}

// Per process.

export const PENDING_LIMITS = { maxEntries: 200, doneTtlMs: 60 * 60_000, failedTtlMs: 10 * 60_000 };

export interface Held<A> {
	key: string;
	handle: string;
	startedAt: number;
	settledAt?: number;
	outcome?: Outcome<A, unknown>;
	/** Never rejects. */
	done: Promise<Outcome<A, unknown>>;
	/** Called once when a caller got the answer (replay.ts clears the durable record then). */
	onCollect?: () => Promise<void>;
}

/**
 * The key of one held intent: where it is asked (the workflow's node: two agents, or two workflows,
 * with the same arguments are two generations), who asks (the key's fingerprint) and what.
 */
export function generationKey(place: string, fingerprint: string, request: object): string {
	return requestDigest(request, `${place} ${fingerprint}`);
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
