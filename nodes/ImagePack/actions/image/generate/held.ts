/**
 * Generations this n8n process holds for tool callers (`heldAnswer`): an MCP client gives a call 60 s,
 * a generation takes up to 5 minutes. A tool call with an answer bound joins the generation held for
 * the same node, key and request (identity.ts `held`), or starts it (the item sequence, execute.ts),
 * and answers within the bound with the images or "still running" and a handle; a repeat call, the
 * handle, or n8n's tool retry joins the same generation instead of paying for another. A handle
 * answers only the request, key and node it was made for.
 */
import { type IDataObject, sleep } from 'n8n-workflow';

import { chargeHint, errorFacts, imagePackError } from '../../../shared/errors';
import type { Generated } from './output';
import type { ItemRun } from './plan';
import { type Held, type Outcome, PendingGenerations } from './stores';
import { failureKind } from './verdict';

/** A sent generation's answer, and how to tell the record that the caller has it. */
export interface Paid {
	answer: Generated;
	/** The caller has it (`delivered`), or the node run ended without handing it over (durable.ts). */
	answered: (delivered?: boolean) => Promise<void>;
}

// Module-level on purpose: held generations outlive a call.
const pending = new PendingGenerations<Generated>();

/** `promise`'s value, or undefined when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
	if (ms === Infinity) return await promise; // a timer would read Infinity as 1 ms
	const stop = new AbortController();
	const timer = sleep(ms, stop.signal).catch(() => {});
	return await Promise.race([promise, timer.then(() => undefined)]).finally(() => stop.abort());
}

/** What the caller is told while the generation runs on: how long, and how to collect it. */
function stillRunning({ ctx, plan }: ItemRun, held: Held<Generated>, boundMs: number) {
	const ago = Math.round((Date.now() - held.startedAt) / 1000);
	const left = Math.max(
		0,
		Math.round((held.startedAt + plan.options.timeoutMs - Date.now()) / 1000),
	);
	const options = ctx.getNode().parameters.options as IDataObject | undefined;
	const wired = /\$fromAI\(/i.test(String(options?.handle ?? ''));
	const how = wired
		? `call this tool again with the same arguments and handle "${held.handle}"`
		: 'call this tool again with exactly the same arguments';
	const message = `The generation is still running (started ${ago} s ago; a generation takes up to 5 minutes, this one is given up in ${left} s). Nothing more is charged to collect it: ${how}; that call waits up to ${boundMs / 1000} s for the result. With other arguments${wired ? ' and no handle' : ''} a new generation is started and charged.`;
	return { status: 'running', handle: held.handle, started_seconds_ago: ago, message };
}

/**
 * The generation's answer within `boundMs`: the one held for the same request (or `handle`), else
 * the one `start` (execute.ts's item sequence) sends now; `{ running }` when it is not done yet (the
 * request goes on). A handle this process does not hold never sends. The caller collects the
 * answer (`collect`) once its output is built: the answer is handed out once, and the record's tool
 * windows go then.
 */
export async function heldAnswer(
	item: ItemRun,
	key: string,
	boundMs: number,
	start: () => Promise<Paid>,
): Promise<{ answer: Generated; collect: () => Promise<void> } | { running: IDataObject }> {
	const { ctx, itemIndex, plan } = item;
	const node = ctx.getNode();
	const failed = (error: unknown) =>
		({ kind: failureKind(errorFacts(error)), failure: error }) as Outcome<never, unknown>;
	let started: Promise<Paid> | undefined;
	const send = async () => {
		started = start();
		return (await started).answer;
	};
	const { handle } = plan.options;
	const held = handle ? pending.find(handle, key) : pending.join(key, send, failed).held;
	if (held === 'other' || !held) {
		const why =
			held === 'other'
				? "was made for other arguments, another API key or another node, so it is not this call's answer"
				: `is not held by this n8n process: it was collected already, finished more than ${pending.limits.doneTtlMs / 60_000} minutes ago, n8n restarted, or another queue-mode worker ran it`;
		throw imagePackError(
			node,
			{ code: 'unknown_handle', charge: 'not_sent', itemIndex },
			{
				message: `The generation with handle "${handle.slice(0, 40)}" ${why}. Nothing was sent. ${chargeHint(plan.request.body.session_id)}; call without the handle only if the user wants a new, charged generation`,
			},
		);
	}
	if (started) {
		const paid = started.catch(() => undefined);
		held.onCollect = async () => await (await paid)?.answered();
	}
	const outcome = await within(held.done, boundMs);
	if (!outcome) return { running: stillRunning(item, held, boundMs) };
	if (outcome.kind === 'generated') {
		return { answer: outcome.answer, collect: async () => await pending.collected(held) };
	}
	await pending.collected(held);
	throw outcome.failure;
}
