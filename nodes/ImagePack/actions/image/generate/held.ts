/**
 * Generations this n8n process holds for tool callers (`heldAnswer`): an MCP client gives a call 60 s,
 * a generation takes up to 5 minutes. A tool call with an answer bound joins the generation held for
 * the same node, key and request, or starts it (recorded first, replay.ts `recordSend`), and answers
 * within the bound with the images or "still running" and a handle; a repeat call, the handle, or
 * n8n's tool retry joins the same generation instead of paying for another. A handle answers only the
 * request, key and node it was made for. Outcomes in replay.ts's vocabulary (`failureOutcome`).
 */
import { type IDataObject, sleep } from 'n8n-workflow';

import { chargeHint, errorFacts, imagePackError, mayHaveBeenCharged } from '../../../shared/errors';
import { asNodeError } from '../../items';
import type { Claim } from './durable';
import type { ItemRun } from './plan';
import { type Generated, type Sender, failureOutcome, recordSend } from './replay';
import { type Held, PendingGenerations, generationKey } from './stores';

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
 * the one `send` starts now; `{ running }` when it is not done yet (the request goes on). A handle
 * this process does not hold never sends.
 */
export async function heldAnswer(
	item: ItemRun,
	boundMs: number,
	{ send, claim }: Sender,
): Promise<Generated | { running: IDataObject }> {
	const { ctx, connection, itemIndex, plan } = item;
	const request = { body: plan.request.body, language: plan.options.acceptLanguage };
	const node = ctx.getNode();
	const key = generationKey(
		`${ctx.getWorkflow().id ?? ''} ${node.id}`,
		connection.fingerprint,
		request,
	);
	const failed = (error: unknown) => failureOutcome(error, errorFacts(error));
	let claimed: Promise<Claim> | undefined;
	const start = async () => {
		claimed = recordSend(item, claim, 'all');
		const recorded = await claimed;
		return await send().catch(async (error: unknown) => {
			if (!mayHaveBeenCharged(errorFacts(error))) await recorded.release('all');
			throw asNodeError(ctx, error, itemIndex);
		});
	};
	const { handle } = plan.options;
	const held = handle ? pending.find(handle, key) : pending.join(key, start, failed).held;
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
	if (claimed) {
		const recorded = claimed.catch(() => undefined);
		held.onCollect = async () => await (await recorded)?.release('tool');
	}
	const outcome = await within(held.done, boundMs);
	if (!outcome) return { running: stillRunning(item, held, boundMs) };
	await pending.collected(held);
	if (outcome.kind === 'generated') return outcome.answer;
	throw outcome.failure;
}
