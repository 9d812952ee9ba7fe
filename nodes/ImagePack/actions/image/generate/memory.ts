/**
 * What Generate remembers of each item so that a retry never pays twice and never loses what was
 * paid for. Pure: the caller hands in the store and the facts; no n8n, no HTTP.
 *
 * Why it has this shape (n8n 2.41.1, `workflow-execute.js`): Retry On Fail runs the node again with
 * the same input items and tells it nothing; *Executions → Retry* starts a new execution (new id)
 * from a copy of the failed one's data, the execution's context data included, and runs the failed
 * node under the same run index. So the store lives in the node's execution context data, keyed by
 * run index and item index, and each record holds a digest of what was asked (an item whose
 * parameters changed is a new generation) and the execution it happened in (a retried execution
 * may send again what an earlier try of the same execution may not).
 */
import { createHash } from 'crypto';

import { rule } from '../../../shared/codes';
import { type ErrorFacts, mayHaveBeenCharged } from '../../../shared/errors';

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

export type Outcome =
	| { kind: 'generated'; answer: StoredAnswer }
	/** Sent, and no clear answer came back: it may have run and been charged. */
	| { kind: 'uncertain'; failure: StoredFailure }
	/** The service refused it (nothing charged), or it was never sent. */
	| { kind: 'refused'; failure: StoredFailure };

export type Memo = Outcome & { digest: string; executionId: string };

export type Decision =
	| { action: 'send' }
	| { action: 'replay'; answer: StoredAnswer }
	| { action: 'report'; memo: Memo & { kind: 'uncertain' | 'refused' }; sameExecution: boolean };

/** Whether a try of the same execution sends a refused item again (the code's `retryOnFail`). */
export function sendsAgainInExecution(failure: StoredFailure): boolean {
	return rule(failure.code).retryOnFail === true;
}

/**
 * What to do with an item: `memo` is what an earlier try (or the execution this one retries)
 * recorded for it. A generated item comes back as it was; an uncertain one is never sent again by
 * the same execution, and by a retried one only when the user asks for it after checking the
 * session; a refused one is sent again by a retried execution (its cause may have been fixed) and,
 * within one execution, only when another try can pass.
 */
export function decide(
	memo: Memo | undefined,
	asked: { digest: string; executionId: string; resendUncertain: boolean },
): Decision {
	if (!memo || memo.digest !== asked.digest) return { action: 'send' };
	if (memo.kind === 'generated') return { action: 'replay', answer: memo.answer };
	const sameExecution = memo.executionId === asked.executionId;
	if (memo.kind === 'uncertain') {
		return sameExecution || !asked.resendUncertain
			? { action: 'report', memo, sameExecution }
			: { action: 'send' };
	}
	if (!sameExecution || sendsAgainInExecution(memo.failure)) return { action: 'send' };
	return { action: 'report', memo, sameExecution };
}

/** How a failure is remembered: `may_have_been_charged` is uncertain, anything else a refusal. */
export function failureOutcome(failure: StoredFailure): Outcome {
	return mayHaveBeenCharged(failure)
		? { kind: 'uncertain', failure }
		: { kind: 'refused', failure };
}

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
 * What was asked: the request body, and who asks (`asker`: the credential, and a tool call's id).
 * 16 hex digits: one run holds a few thousand items at most, so a 64-bit digest cannot collide by
 * chance.
 */
export function requestDigest(body: object, asker = ''): string {
	return createHash('sha256').update(canonical({ body, asker })).digest('hex').slice(0, 16);
}

type RunRecords = Record<string, Memo>;
type Store = Record<string, unknown>;

/** The records of one run of the node, in `store[MEMORY_KEY][runIndex][itemIndex]`. */
export class RunMemory {
	private readonly runs: Record<string, RunRecords>;

	constructor(
		store: Store,
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

	remember(itemIndex: number, digest: string, outcome: Outcome): void {
		const records = (this.runs[this.runIndex] ??= {});
		records[itemIndex] = { ...outcome, digest, executionId: this.executionId };
	}
}
