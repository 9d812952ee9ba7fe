/**
 * What the trigger's integration tests share: the emulator for the file, a poller host running the
 * trigger the way n8n 2.41 does (test/harness/polling.ts), and checks on what it delivered.
 */
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePackTrigger } from '../../../nodes/ImagePack/ImagePackTrigger.node';
import type { retryPolicy } from '../../../nodes/ImagePack/transport/limits';
import { useEmulator } from '../../harness/emulator';
import { DurablePollerHost, LegacyPollerHost } from '../../harness/polling';

export const nodeType = new ImagePackTrigger();

export interface HostExtra {
	stored?: string;
	nodeName?: string;
	/** n8n's poll budget in ms (getPollBudgetMs); none: the poll times alone bound a poll. */
	budget?: number;
}

/** The emulator for this file, and hosts that poll it. */
export function useTrigger(
	policy: Partial<typeof retryPolicy> = { backoffMs: 1, maxRetryAfterSeconds: 1 },
) {
	const emu = useEmulator(policy);
	const credentials = () => ({ baseUrl: emu.baseUrl, apiKey: emu.apiKey });
	const options = (parameters: INodeParameters, extra: HostExtra) => ({
		nodeType,
		parameters,
		credentials: credentials(),
		stored: extra.stored,
		nodeName: extra.nodeName,
		getPollBudgetMs: extra.budget === undefined ? undefined : () => extra.budget!,
	});
	return {
		emu,
		credentials,
		/** n8n's legacy scheduler: one long-lived workflow. */
		host: (parameters: INodeParameters, extra: HostExtra = {}) =>
			new LegacyPollerHost(options(parameters, extra)),
		/** n8n's durable scheduler: a state copy per poll. */
		durableHost: (parameters: INodeParameters, extra: HostExtra = {}) =>
			new DurablePollerHost(options(parameters, extra)),
		listRequests: async () => (await emu.control.requests({ route: 'listPublications' })).length,
		/** Waits until the emulator has received `count` list requests (it logs them on arrival). */
		listRequestsArrived: async (count: number) => {
			for (let tries = 0; tries < 1000; tries++) {
				if ((await emu.control.requests({ route: 'listPublications' })).length >= count) return;
				await sleep(5);
			}
			throw new Error(`fewer than ${count} list requests arrived`);
		},
		/** Lets `okBefore` requests of the route through, then applies `fault` to the next one(s). */
		faultAfter: async (
			route: 'listPublications' | 'getPublication',
			okBefore: number,
			fault: Omit<Parameters<typeof emu.control.injectFault>[0], 'route'>,
		) => {
			if (okBefore > 0) {
				const slow = { route, kind: 'slow' as const, when: 'before' as const, delayMs: 1 };
				await emu.control.injectFault({ ...slow, count: okBefore });
			}
			await emu.control.injectFault({ ...fault, route });
		},
		/** Publishes through the global sequence; `commit: false` keeps it pending (a late commit). */
		publish: async (accountId?: string, packId?: string, commit = true) =>
			await emu.control.publish({ accountId, packId, commit }),
	};
}

export const ids = (items: INodeExecutionData[]) => items.map((item) => item.json.id as number);
export const emittedIds = (executions: INodeExecutionData[][]) => executions.flatMap(ids);
export const storedBytes = (stored: string) => Buffer.byteLength(stored);
export const range = (from: number, to: number) =>
	Array.from({ length: to - from + 1 }, (_, i) => from + i);

export function expectOrderedBatches(executions: INodeExecutionData[][]) {
	for (const items of executions) {
		const batch = ids(items);
		expect(batch).toEqual([...batch].sort((a, b) => a - b));
	}
}

/**
 * Every visible publication delivered exactly once: of the ids that list one publication
 * (`keyOf`; undefined = an id of its own), exactly one is delivered, and nothing else.
 */
export function expectOncePerPublication(
	delivered: number[],
	visible: number[],
	keyOf: (id: number) => string | undefined = () => undefined,
) {
	const byKey = new Map<string, number[]>();
	for (const id of visible) {
		const key = keyOf(id) ?? `#${id}`;
		byKey.set(key, [...(byKey.get(key) ?? []), id]);
	}
	const got = new Set(delivered);
	const problems = [...byKey]
		.map(([key, list]) => [key, list.filter((id) => got.has(id))] as const)
		.filter(([, hits]) => hits.length !== 1)
		.map(([key, hits]) => `${key} delivered ${hits.length} times (ids ${hits.join(', ')})`);
	const visibleIds = new Set(visible);
	problems.push(
		...delivered.filter((id) => !visibleIds.has(id)).map((id) => `id ${id} not visible`),
	);
	if (got.size !== delivered.length) problems.push('an id delivered twice');
	expect(problems).toEqual([]);
}
