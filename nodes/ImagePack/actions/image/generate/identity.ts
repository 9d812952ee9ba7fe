/**
 * One item's identity, made once per item: who asks (the key's fingerprint) what (the request), in
 * which run, and which of the run's identical asks it is. Every key of the money path derives from it
 * here and nowhere else: the execution's memory, the ledger's values (encoded by ledger.ts), the held
 * generation. `runName` and `nodeName` read the n8n context; the rest is pure.
 *
 * - *The run* (`runName`): the execution's resume token (n8n 2.14+), which *Executions → Retry*
 *   copies and a new execution does not have; before 2.14 the execution id (a 1.x queue re-run of a
 *   stalled job keeps it). docs/retry.md says why.
 * - *The occurrence*: among the identical asks of the execution, across the node's runs (a loop's
 *   batches), which one this is. Not the run index: n8n's crash recovery shifts a loop's run indexes
 *   on a retry, while the order of the asks stays. An item the execution's memory recognises keeps
 *   the identity it had, so an edit to another row moves nothing.
 */
import { createHash } from 'crypto';
import type { IExecuteFunctions } from 'n8n-workflow';

import { askOf, ledger } from './ledger';

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

/** The run as a retry knows it: the resume token a retry copies (n8n 2.14+), else the execution id. */
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

/** The workflow's node, as every record of the node names it. */
export function nodeName(ctx: IExecuteFunctions): string {
	return `${ctx.getWorkflow().id ?? ''} ${ctx.getNode().id}`;
}

/** What one item asks, as planned. */
export interface Ask {
	body: object;
	language: string;
	/** An AI Agent 3.x tool call's id ('' otherwise). */
	call: string;
	idempotencyKey: string;
}

/** Where the item runs: what is the same for every item of the node run. */
export interface Place {
	/** The workflow and the node (`workflow id` + `node id`). */
	node: string;
	/** The run (`runName`). */
	run: string;
	/** Before n8n 2.14, what a retry shares with the run it retries (recall.ts `triggerRun`). */
	trigger?: string;
	fingerprint: string;
}

/** Everything the money path knows an item by. */
export interface ItemIdentity {
	/** What is asked: the body and the language of the answer's warnings (no call id). */
	digest: string;
	call: string;
	fingerprint: string;
	/** Which of the execution's identical asks of this account this is (0 for the first). */
	occurrence: number;
	/** The durable record's value of a send of this run: the run, the account's key, the ask. */
	send: string;
	/**
	 * Before n8n 2.14 (no resume token), the same send named by the trigger's items, which a retry
	 * shares with the run it retries; consulted only by a retry of a run n8n stopped in this node
	 * (recall.ts `cutOff`), since identical manual runs or webhook calls share it too.
	 */
	witness?: string;
	/** The ledger's value of the user's Idempotency Key under this account ('' without one). */
	key: string;
	/**
	 * Recorded beside the key until its node run ends with the answer: found later, the key's
	 * generation may have been paid and never delivered (n8n stopped), which is reported, not free.
	 */
	keyOpen: string;
	/** The held generation's key: node, key's fingerprint, request (tool calls with an answer bound). */
	held: string;
}

export function identify(place: Place, ask: Ask, digest: string, occurrence: number): ItemIdentity {
	const asked = askOf(digest, place.fingerprint);
	const keyed = (value: typeof ledger.key) =>
		ask.idempotencyKey ? value(place.node, place.fingerprint, ask.idempotencyKey) : '';
	return {
		digest,
		call: ask.call,
		fingerprint: place.fingerprint,
		occurrence,
		send: ledger.send(place.run, asked, occurrence),
		witness: place.trigger && ledger.send(place.trigger, asked, occurrence),
		key: keyed(ledger.key),
		keyOpen: keyed(ledger.open),
		held: requestDigest(
			{ body: ask.body, language: ask.language },
			`${place.node} ${place.fingerprint}`,
		),
	};
}

export function digestOf(ask: Pick<Ask, 'body' | 'language'>): string {
	return requestDigest({ body: ask.body, language: ask.language });
}

/** Identical asks before this node run, per ask (`askOf`): the execution's count so far. */
export type AskCounts = Record<string, number>;

/**
 * Each item's occurrence: an item the memory recognises keeps its own (`kept`); the others take,
 * in input order, the next occurrences of their digest after `before` that no kept item holds.
 * Returns the occurrences and the counts after this run.
 */
export function occurrences(
	digests: Array<string | undefined>,
	kept: Array<number | undefined>,
	before: AskCounts,
): { occurrence: number[]; after: AskCounts } {
	const taken = new Map<string, Set<number>>();
	digests.forEach((digest, index) => {
		const own = kept[index];
		if (digest === undefined || own === undefined) return;
		taken.set(digest, (taken.get(digest) ?? new Set()).add(own));
	});
	const after: AskCounts = { ...before };
	const next = new Map<string, number>();
	const occurrence = digests.map((digest, index) => {
		if (digest === undefined) return 0;
		let own = kept[index];
		if (own === undefined) {
			own = next.get(digest) ?? before[digest] ?? 0;
			while (taken.get(digest)?.has(own)) own++;
			next.set(digest, own + 1);
		}
		after[digest] = Math.max(after[digest] ?? 0, own + 1);
		return own;
	});
	return { occurrence, after };
}
