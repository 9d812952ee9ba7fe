/**
 * One call's bounds: a deadline and the execution's cancel signal (Stop), merged into the signal
 * every request, body read and wait of the call listens to.
 */
import { sleep } from 'n8n-workflow';

import type { ApiContext } from './connection';
import { DEFAULT_TIMEOUT_MS } from './limits';

/** n8n's cancel signal for this execution (Stop), where the context offers one (polls have none). */
export function executionCancelSignal(ctx: object): AbortSignal | undefined {
	const getter = (ctx as { getExecutionCancelSignal?: () => AbortSignal | undefined })
		.getExecutionCancelSignal;
	return typeof getter === 'function' ? getter.call(ctx) : undefined;
}

export interface CallScope {
	signal: AbortSignal;
	/** n8n's execution cancel signal, when the context has one (executions do, polls do not). */
	cancel?: AbortSignal;
	/** The time the call was given (after any deadline cut it), for messages. */
	timeoutMs: number;
	deadline: number;
}

/** Largest delay a timer takes; longer ones fire at once (Node clamps them to 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Opens a call of at most `timeoutMs`, cut to `deadline` (epoch ms) when one is given: a poll's
 * requests and waits all end by the poll's own deadline.
 */
export function openScope(ctx: ApiContext, timeoutMs?: number, deadline?: number): CallScope {
	let ms = Math.floor(Number(timeoutMs)) || DEFAULT_TIMEOUT_MS;
	if (deadline !== undefined) ms = Math.min(ms, deadline - Date.now());
	const bounded = Math.min(Math.max(1, ms), MAX_TIMER_MS);
	const cancel = executionCancelSignal(ctx);
	const timer = AbortSignal.timeout(bounded);
	return {
		signal: cancel ? AbortSignal.any([cancel, timer]) : timer,
		cancel,
		timeoutMs: bounded,
		deadline: Date.now() + bounded,
	};
}

export function remainingMs(scope: CallScope): number {
	return Math.max(1, scope.deadline - Date.now());
}

/** Waits `ms`, or rejects as soon as the call is stopped or out of time. */
export async function pause(ms: number, scope: CallScope): Promise<void> {
	if (scope.signal.aborted) throw new Error('aborted');
	let onAbort: (() => void) | undefined;
	try {
		await Promise.race([
			sleep(ms),
			new Promise<never>((_resolve, reject) => {
				onAbort = () => reject(new Error('aborted'));
				scope.signal.addEventListener('abort', onAbort, { once: true });
			}),
		]);
	} finally {
		if (onAbort) scope.signal.removeEventListener('abort', onAbort);
	}
}
