/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts): two polls of one trigger at once, under both of n8n's schedulers.
 */
import type { INodeExecutionData } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import type { DurablePollerHost } from '../../harness/polling';
import { emittedIds, useTrigger } from './helpers';

const { emu, host, durableHost, listRequests } = useTrigger();

describe('two polls of one trigger at once (the poll guard)', () => {
	const durable = (budget = 1500) =>
		durableHost({ startFrom: 'beginning', includeManifest: true }, { budget });
	const all = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
	const expectOnce = (executions: INodeExecutionData[][], count: number) => {
		const got = emittedIds(executions);
		expect(got).toHaveLength(new Set(got).size);
		expect([...got].sort((a, b) => a - b)).toEqual(all(count));
	};
	/** Timed polls until `count` publications are delivered (or a bound on polls is reached). */
	async function drain(poller: DurablePollerHost, count: number) {
		for (let polls = 0; polls < 200 && emittedIds(poller.executions).length < count; polls++) {
			await poller.tick();
			await poller.settle();
		}
	}

	it('durable: two polls with their own state copies at once, one delivers, the other waits and skips', async () => {
		await emu.control.publishBulk({ count: 120 });
		await emu.control.setLatency('getPublication', 15);
		const poller = durable();
		const outcomes = await Promise.all([poller.tick(), poller.tick()]);
		await poller.settle();
		expect(outcomes.map((outcome) => outcome.kind).sort()).toEqual(['emitted', 'null']);
		await drain(poller, 120);
		await emu.control.setLatency('getPublication', 0);
		expectOnce(poller.executions, 120);
		expect(poller.executions.length).toBeGreaterThan(1); // Max Publications per Poll (100) cut it
	});

	it('durable: a poll handed a cursor older than this process delivered skips until n8n commits it', async () => {
		await emu.control.publishBulk({ count: 40 });
		const poller = durable(60_000);
		let land = () => {};
		poller.commitDelay = async () => await new Promise<void>((resolve) => (land = resolve));
		expect((await poller.tick()).kind).toBe('emitted'); // its commit has not landed yet
		await emu.control.publishBulk({ count: 5 });
		const before = await listRequests();
		expect((await poller.tick()).kind).toBe('null'); // same old cursor: would re-deliver 40
		expect(await listRequests()).toBe(before); // skipped before any request
		land();
		poller.commitDelay = async () => {};
		await poller.settle();
		await drain(poller, 45);
		expectOnce(poller.executions, 45);
	});

	it('durable: after a restart, the retried poll and the next scheduled one (same cursor) deliver once', async () => {
		await emu.control.publishBulk({ count: 150 });
		await emu.control.setLatency('getPublication', 15);
		const poller = durable();
		const interrupted = poller.tick(); // the process dies while this poll runs
		await sleep(0);
		poller.restart();
		const [retried, scheduled] = await Promise.all([poller.tick(), poller.tick()]);
		expect([retried.kind, scheduled.kind].sort()).toEqual(['emitted', 'null']);
		expect((await interrupted).kind).toBe('null'); // its process is gone: never committed
		await poller.settle();
		await drain(poller, 150);
		await emu.control.setLatency('getPublication', 0);
		expectOnce(poller.executions, 150);
	});

	it('legacy: polls fired during a running poll end after it, so they never take its expression engine', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true });
		await poller.activate(); // an empty account: nothing yet
		await emu.control.publishBulk({ count: 80 });
		await emu.control.setLatency('getPublication', 10);
		const ended: string[] = [];
		const first = poller.tick().then((outcome) => ended.push(`first:${outcome.kind}`));
		await sleep(0);
		const second = poller.tick().then((outcome) => ended.push(`second:${outcome.kind}`));
		await Promise.all([first, second]);
		await emu.control.setLatency('getPublication', 0);
		expect(ended).toEqual(['first:emitted', 'second:null']);
		expect(emittedIds(poller.executions)).toEqual(all(80));
	});

	it('legacy: a poll whose expression engine n8n took away mid-poll still completes (its requests use no expression)', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true });
		await poller.activate();
		await emu.control.publishBulk({ count: 60 });
		let details = 0;
		await emu.control.setLatency('getPublication', 5);
		const watching = (async () => {
			while (details < 20)
				details = (await emu.control.requests({ route: 'getPublication' })).length;
			poller.releaseExpressionEngine();
		})();
		const outcome = await poller.tick();
		await watching;
		await emu.control.setLatency('getPublication', 0);
		// The credential authenticates in code, so the manifests after the teardown are read as before.
		expect(outcome.kind).toBe('emitted');
		expect(emittedIds(poller.executions)).toEqual(all(60));
		expect(await emu.control.requests({ route: 'getPublication' })).toHaveLength(60);
	});
});
