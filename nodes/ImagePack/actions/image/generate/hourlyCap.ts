/**
 * Max Credits per Hour: what one node spent or reserved in the last hour (a sliding window), across
 * all its executions and tool calls in this n8n process (a queue-mode worker counts its own; a
 * restart starts from zero). A reservation is taken synchronously before sending and settled with
 * what was charged. Pure: no n8n, no timers. Bounded: spends older than an hour are dropped, and at
 * most `maxNodes` nodes are tracked (the least recently used is dropped).
 */
export const HOUR_MS = 60 * 60_000;

export interface Spend {
	at: number;
	credits: number;
}

export type Reservation =
	| { ok: true; spend: Spend }
	| { ok: false; spent: number; freesInMs: number };

export class HourlyCaps {
	private readonly nodes = new Map<string, Spend[]>();

	constructor(
		private readonly now = () => Date.now(),
		private readonly maxNodes = 1000,
	) {}

	/** The spends of the last hour under `node` (a workflow's node), oldest first. */
	private recent(node: string): Spend[] {
		const since = this.now() - HOUR_MS;
		const spends = (this.nodes.get(node) ?? []).filter(
			(spend) => spend.at > since && spend.credits > 0,
		);
		this.nodes.delete(node); // re-inserted last: the Map's order is the least recently used first
		this.nodes.set(node, spends);
		while (this.nodes.size > this.maxNodes) this.nodes.delete(this.nodes.keys().next().value!);
		return spends;
	}

	/** Reserves `estimate` under a cap (> 0), or says what was spent and when credits free up. */
	reserve(node: string, estimate: number, cap: number): Reservation {
		const spends = this.recent(node);
		const spent = spends.reduce((sum, spend) => sum + spend.credits, 0);
		if (spent + estimate > cap) {
			let freed = spent;
			const next = spends.find((spend) => (freed -= spend.credits) + estimate <= cap);
			const freesInMs = next ? Math.max(0, next.at + HOUR_MS - this.now()) : HOUR_MS;
			return { ok: false, spent, freesInMs };
		}
		const spend = { at: this.now(), credits: estimate };
		spends.push(spend);
		return { ok: true, spend };
	}

	/** Replaces a reservation by what was charged (0 when nothing was). */
	settle(spend: Spend, charged: number): void {
		spend.credits = Math.max(0, charged);
	}
}
