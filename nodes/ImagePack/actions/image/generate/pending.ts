/**
 * Generations started by tool calls, held by this n8n process (the main, or the queue-mode worker that
 * ran the call), so that a caller who stopped waiting, a repeat of the call, or n8n's Retry On Fail
 * gets the same generation instead of paying for another. Pure: no n8n, no timers.
 *
 * Held per generation: its key (requestDigest of the request body and of the credential's base URL
 * and a SHA-256 of its API key: never the key, never the credential id), a random handle, when it
 * started and settled, and its outcome: the API's JSON answer, or the error of a request that may
 * have been charged. No binaries. An answer is held until collected (handed to a caller) or
 * `doneTtlMs` after it settled; an uncertain failure `failedTtlMs`, for repeats and retries to meet; a
 * refusal (nothing charged) is not held. At most `maxEntries`: above it the oldest settled entries,
 * then the oldest running ones, are dropped (their requests go on). A restart forgets everything.
 */
import { createHash, randomBytes } from 'crypto';

import { requestDigest } from './memory';

export const PENDING_LIMITS = { maxEntries: 200, doneTtlMs: 60 * 60_000, failedTtlMs: 10 * 60_000 };

export type Outcome<A> =
	| { ok: true; answer: A }
	| { ok: false; error: unknown; uncertain: boolean };

export interface Held<A> {
	key: string;
	handle: string;
	startedAt: number;
	settledAt?: number;
	outcome?: Outcome<A>;
	/** Never rejects. */
	done: Promise<Outcome<A>>;
}

/** The key of one intent: who asks (base URL, hashed API key) and what (the body, canonical). */
export function generationKey(baseUrl: string, apiKey: string, request: object): string {
	const keyHash = createHash('sha256').update(apiKey).digest('hex');
	return requestDigest(request, `${baseUrl} ${keyHash}`);
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
	 * The generation held under `key`, or a new one that `start` sends. Synchronous from lookup to
	 * insert: two calls in the same instant share one request.
	 */
	join(
		key: string,
		start: () => Promise<A>,
		isUncertain: (error: unknown) => boolean,
	): { held: Held<A>; joined: boolean } {
		this.sweep(0);
		const found = this.held.get(key);
		if (found) return { held: found, joined: true };
		this.sweep(1);
		const handle = `gen_${randomBytes(9).toString('hex')}`;
		const held = { key, handle, startedAt: this.now() } as Held<A>;
		held.done = start().then(
			(answer) => this.settle(held, { ok: true, answer }),
			(error: unknown) => this.settle(held, { ok: false, error, uncertain: isUncertain(error) }),
		);
		this.held.set(key, held);
		return { held, joined: false };
	}

	/** What a handle names, else what is held under `key`; never starts anything. */
	find(handle: string, key?: string): Held<A> | undefined {
		this.sweep(0);
		for (const held of this.held.values()) if (held.handle === handle) return held;
		return key === undefined ? undefined : this.held.get(key);
	}

	/** A caller got it: an answer is handed out once (the same arguments then ask anew). */
	collected(held: Held<A>): void {
		if (held.outcome?.ok) this.drop(held);
	}

	private settle(held: Held<A>, outcome: Outcome<A>): Outcome<A> {
		held.outcome = outcome;
		held.settledAt = this.now();
		if (!outcome.ok && !outcome.uncertain) this.drop(held);
		return outcome;
	}

	private drop(held: Held<A>): void {
		if (this.held.get(held.key) === held) this.held.delete(held.key);
	}

	/** Drops what outlived its TTL, then the oldest until `room` more entries fit. */
	private sweep(room: number): void {
		const now = this.now();
		for (const held of [...this.held.values()]) {
			const ttl = held.outcome?.ok ? this.limits.doneTtlMs : this.limits.failedTtlMs;
			if (held.settledAt !== undefined && now - held.settledAt > ttl) this.drop(held);
		}
		while (this.held.size + room > this.limits.maxEntries) {
			const all = [...this.held.values()];
			this.drop(all.find((held) => held.outcome) ?? all[0]);
		}
	}
}
