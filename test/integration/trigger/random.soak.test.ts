/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts): hundreds of seeded random polls with publishers, faults and restarts.
 */
import type { PublicationView } from '../../emulator';
import { mulberry32, type PollOutcome } from '../../harness/polling';
import {
	emittedIds,
	expectOncePerPublication,
	expectOrderedBatches,
	storedBytes,
	useTrigger,
} from './helpers';

const OVERLAP = 50;

const { emu, host, faultAfter } = useTrigger();

describe('randomized: hundreds of polls against the emulator (seeded)', () => {
	/**
	 * Publishers allocate ids from the global sequence and commit them in random order, within the
	 * API's promise: an id still pending when a newer one becomes visible stays within
	 * reread_overlap of the newest visible id (older pending ids are committed first).
	 */
	class Publishers {
		readonly pending: number[] = [];
		readonly committed = new Map<number, string>(); // id -> account
		maxVisible = 0;

		constructor(private readonly random: () => number) {}

		readonly owner = new Map<number, string>();
		/** id -> `pack_id@version`: one publication may be listed under several ids. */
		readonly key = new Map<number, string>();

		async allocate(accountId: string, packId?: string): Promise<number> {
			return this.track(await emu.control.publish({ accountId, packId, commit: false }));
		}

		/** The publication `id` listed again under the next id (pending until committed). */
		async repeat(id: number): Promise<number> {
			return this.track(await emu.control.repeatPublication(id, { commit: false }));
		}

		private track(record: PublicationView): number {
			this.pending.push(record.id);
			this.owner.set(record.id, record.accountId);
			this.key.set(record.id, `${record.pack_id}@${record.version}`);
			return record.id;
		}

		async commit(id: number): Promise<void> {
			const floor = Math.max(this.maxVisible, id) - OVERLAP;
			for (const other of [...this.pending].sort((a, b) => a - b)) {
				if (other !== id && other <= floor) await this.reveal(other);
			}
			await this.reveal(id);
		}

		private async reveal(id: number): Promise<void> {
			const at = this.pending.indexOf(id);
			if (at === -1) return;
			this.pending.splice(at, 1);
			await emu.control.commitPublication(id);
			this.committed.set(id, this.owner.get(id)!);
			this.maxVisible = Math.max(this.maxVisible, id);
		}

		async commitRandom(): Promise<void> {
			if (this.pending.length)
				await this.commit(this.pending[Math.floor(this.random() * this.pending.length)]);
		}

		async commitAll(): Promise<void> {
			while (this.pending.length) await this.commit(this.pending[0]);
		}

		of(accountId: string): number[] {
			return [...this.committed]
				.filter(([, account]) => account === accountId)
				.map(([id]) => id)
				.sort((a, b) => a - b);
		}
	}

	/** A failed activation is retried by n8n later; here: once the faults are gone. */
	async function activateWithRetry(activate: () => Promise<PollOutcome>) {
		try {
			await activate();
		} catch {
			await emu.control.clearFaults();
			await activate();
		}
	}

	async function scenario(seed: number, polls: number) {
		const random = mulberry32(seed);
		const other = await emu.control.createAccount();
		const me = emu.accountId;
		const publishers = new Publishers(random);
		const packs = ['pk_repeat_a', 'pk_repeat_b', 'pk_repeat_c'];
		let includeManifest = random() < 0.5;
		const poller = host({ startFrom: 'beginning', includeManifest });
		await poller.activate();
		let maxStored = 0;
		let faults = 0;
		let restarts = 0;

		for (let step = 0; step < polls; step++) {
			const roll = random();
			const actions = roll < 0.3 ? 0 : Math.floor(random() * 5);
			for (let i = 0; i < actions; i++) {
				const what = random();
				if (what < 0.45) {
					const account = random() < 0.7 ? me : other.accountId;
					const pack =
						account === me && random() < 0.3
							? packs[Math.floor(random() * packs.length)]
							: undefined;
					const id = await publishers.allocate(account, pack);
					if (random() < 0.6) await publishers.commit(id);
				} else if (what < 0.75) {
					await publishers.commitRandom();
				} else if (what < 0.8) {
					// One of ours listed again under a new id, 1 to 400 ids after the first one.
					const span = [1, 3, 20, 50, 51, 120, 400][Math.floor(random() * 7)];
					const newest = Math.max(0, ...publishers.owner.keys());
					const near = [...publishers.owner]
						.filter(([id, account]) => account === me && id > newest - span)
						.map(([id]) => id);
					if (near.length) {
						const copy = await publishers.repeat(near[Math.floor(random() * near.length)]);
						if (random() < 0.6) await publishers.commit(copy);
					}
				} else if (what < 0.85) {
					// A burst from other accounts and ours (several pages).
					await publishers.commitAll();
					const account = random() < 0.5 ? me : other.accountId;
					const { firstId, lastId } = await emu.control.publishBulk({
						accountId: account,
						count: 1 + Math.floor(random() * 500),
					});
					for (let id = firstId; id <= lastId; id++) publishers.committed.set(id, account);
					publishers.maxVisible = lastId;
				}
			}
			const event = random();
			if (event < 0.06) {
				faults++;
				const route = includeManifest && random() < 0.5 ? 'getPublication' : 'listPublications';
				const okBefore = Math.floor(random() * 3);
				const kind = random() < 0.5 ? 'status' : 'reset';
				await faultAfter(route, okBefore, { kind, status: 500, count: 3 });
			} else if (event < 0.1) {
				restarts++;
				await activateWithRetry(() => poller.restart());
			} else if (event < 0.13) {
				includeManifest = !includeManifest;
				await activateWithRetry(() => poller.update({ startFrom: 'beginning', includeManifest }));
			}
			const outcome: PollOutcome = await poller.tick();
			if (outcome.kind === 'error') await emu.control.clearFaults();
			maxStored = Math.max(
				maxStored,
				storedBytes(poller.stored),
				storedBytes(JSON.stringify(poller.memory())),
			);
		}
		await emu.control.clearFaults();
		await publishers.commitAll();
		for (let i = 0; i < 5; i++) await poller.tick();

		const got = emittedIds(poller.executions);
		expectOncePerPublication(got, publishers.of(me), (id) => publishers.key.get(id));
		expectOrderedBatches(poller.executions);
		expect(maxStored).toBeLessThan(16 * 1024);
		return { delivered: got.length, faults, restarts, errors: poller.errors.length };
	}

	it.each([11, 12, 13])(
		'seed %i: every publication exactly once, in order, static data < 16 KiB',
		async (seed) => {
			const stats = await scenario(seed, 150);
			expect(stats.delivered).toBeGreaterThan(50);
			expect(stats.errors).toBeGreaterThan(0);
		},
		60_000,
	);
});
