/**
 * The trigger's cursor belongs to the account behind the credential's key, in real n8n poll contexts
 * against the emulator (accounts, keys and publications from its control API). Publication ids are
 * one sequence for all accounts, so a cursor carried over to another account would skip that
 * account's publications below it. When the key changes, the trigger asks the API about a
 * publication it read (its detail: 200 same account, 404 another): a new key of the same account
 * keeps the cursor, another account's key starts afresh as Start From says, and no answer either way
 * fails the poll until one comes. n8n keeps nothing of a poll that delivers nothing, so every
 * decision comes out the same when the poll is repeated (after a restart).
 */
import type { INodeParameters } from 'n8n-workflow';

import { pollLog } from '../../harness/n8n';
import { emittedIds, range, useTrigger } from './helpers';

const { emu, host, durableHost, credentials } = useTrigger();

const NODE = 'node:Image Pack Trigger';

beforeEach(() => {
	pollLog.length = 0;
});

/** Another account on the same server, with a key of its own. */
async function otherAccount() {
	const { accountId } = await emu.control.createAccount();
	const { key } = await emu.control.createKey({ accountId });
	return { accountId, credentials: { baseUrl: emu.baseUrl, apiKey: key } };
}

/** `count` publications of `accountId` (default: the credential's own account); their ids. */
async function publishFor(count: number, accountId?: string): Promise<number[]> {
	const { firstId, lastId } = await emu.control.publishBulk({ accountId, count });
	return range(firstId, lastId);
}

const detailRequests = async () => await emu.control.requests({ route: 'getPublication' });
const warnings = () => pollLog.filter((entry) => entry.level === 'warn').map((e) => e.message);
const storedState = (stored: string) => JSON.parse(stored)[NODE] as Record<string, unknown>;

describe("another account's key on the same server", () => {
	/**
	 * The other account publishes 1..50, ours 51..100 (delivered), the other 101..120: all of the
	 * other account's are below or just above our cursor.
	 */
	async function switched(parameters: INodeParameters) {
		const other = await otherAccount();
		const below = await publishFor(50, other.accountId);
		const ours = await publishFor(50);
		const poller = host({ includeManifest: false, ...parameters });
		await poller.activate();
		if (parameters.startFrom !== 'now') expect(emittedIds(poller.executions)).toEqual(ours);
		const above = await publishFor(20, other.accountId);
		poller.useCredentials(other.credentials);
		return { poller, other, below, above, ours };
	}

	it('Start From "beginning": every publication of the new account is delivered, those below the old cursor too; the log says so', async () => {
		const { poller, other, below, above, ours } = await switched({ startFrom: 'beginning' });
		await emu.control.clearRequests();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...below, ...above]);
		// One question: the detail of the newest publication read with the old key (404 for this one).
		expect((await detailRequests()).map((request) => request.path)).toEqual([
			`/api/v1/image-pack-publications/${ours[ours.length - 1]}`,
		]);
		expect(warnings()).toHaveLength(1);
		expect(warnings()[0]).toMatch(
			/the credential's API key belongs to another account than the one this trigger read so far \(publication 100 is not this key's account's \(404\)\)\. The trigger starts afresh as Start From says: every publication of the account is delivered, oldest first\./,
		);
		expect(warnings()[0]).not.toMatch(/sk_/);
		// The new account's cursor from now on: no further question, nothing twice.
		const next = await publishFor(3, other.accountId);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...below, ...above, ...next]);
		expect(await detailRequests()).toHaveLength(1);
	});

	it('Start From "now": nothing of the new account from before; its next publication is delivered', async () => {
		const { poller, other } = await switched({ startFrom: 'now' });
		expect(await poller.tick()).toEqual({ kind: 'null' });
		expect(warnings()[0]).toMatch(/only publications from now on are delivered/);
		const [next] = await publishFor(1, other.accountId);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([next]);
	});

	it('Start From "id": the new account\'s publications after Start ID', async () => {
		const { poller, below, above } = await switched({ startFrom: 'id', startId: 20 });
		await poller.tick();
		expect(emittedIds(poller.executions).slice(50)).toEqual([
			...below.filter((id) => id > 20),
			...above,
		]);
	});

	it('Start From "now", polls that deliver nothing and restarts: the same decision every time, nothing from before delivered', async () => {
		const { poller, other } = await switched({ startFrom: 'now' });
		const stored = poller.stored;
		expect(await poller.tick()).toEqual({ kind: 'null' }); // decided: afresh (in memory only)
		expect(await poller.tick()).toEqual({ kind: 'null' }); // no second question
		expect(warnings()).toHaveLength(1);
		expect(poller.stored).toBe(stored); // n8n saved nothing
		await poller.restart(); // the old account's cursor again: asked and decided again
		expect(warnings()).toHaveLength(2);
		await poller.tick();
		expect(poller.executions).toEqual([]);
		const [next] = await publishFor(1, other.accountId);
		await poller.tick();
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([next]);
	});

	it('switching back to the first account starts afresh too (its cursor was dropped)', async () => {
		const { poller, below, above, ours } = await switched({ startFrom: 'beginning' });
		await poller.tick();
		poller.useCredentials(credentials());
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...below, ...above, ...ours]);
		expect(warnings()).toHaveLength(2);
	});
});

describe("another account's key under the durable scheduler", () => {
	it('a fresh start delivered but not yet committed: a poll handed the old cursor skips, nothing twice', async () => {
		const other = await otherAccount();
		const theirs = await publishFor(20, other.accountId);
		const ours = await publishFor(10);
		const poller = durableHost({ startFrom: 'beginning', includeManifest: false });
		await poller.tick();
		await poller.settle();
		expect(emittedIds(poller.executions)).toEqual(ours);
		poller.useCredentials(other.credentials);
		let land = () => {};
		poller.commitDelay = async () => await new Promise<void>((resolve) => (land = resolve));
		expect((await poller.tick()).kind).toBe('emitted'); // afresh: the other account's 20
		expect((await poller.tick()).kind).toBe('null'); // the old cursor again: skipped
		land();
		poller.commitDelay = async () => {};
		await poller.settle();
		await poller.tick();
		await poller.settle();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...theirs]);
	});
});

describe('a new key of the same account', () => {
	it('keeps the cursor, nothing twice, also a key with documents:read only; asked once', async () => {
		const ours = await publishFor(30);
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		const { key } = await emu.control.createKey({ scopes: ['documents:read'] });
		poller.useCredentials({ baseUrl: emu.baseUrl, apiKey: key });
		const more = await publishFor(5);
		await emu.control.clearRequests();
		await poller.tick();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...more]);
		expect(await detailRequests()).toHaveLength(1);
		expect(pollLog.map((entry) => entry.level)).toEqual(['info']);
		expect(pollLog[0].message).toMatch(
			/the credential's API key changed; publication 30 answers for this key, so the key belongs to the same account and the trigger goes on where it was/,
		);
	});

	it('polls that deliver nothing and a restart ask again and decide the same: nothing twice', async () => {
		const ours = await publishFor(30);
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		const { key } = await emu.control.createKey();
		poller.useCredentials({ baseUrl: emu.baseUrl, apiKey: key });
		expect(await poller.tick()).toEqual({ kind: 'null' });
		await poller.restart();
		expect(await poller.tick()).toEqual({ kind: 'null' });
		const more = await publishFor(2);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...more]);
		expect(storedState(poller.stored)).toMatchObject({ witness: more[1] });
	});

	it('the durable scheduler: the adopted key is committed with a poll that delivers nothing', async () => {
		const ours = await publishFor(30);
		const poller = durableHost({ startFrom: 'beginning', includeManifest: false });
		await poller.tick();
		await poller.settle();
		// The durable scheduler stores the node's own static data (poller_state).
		const fp = (JSON.parse(poller.stored) as { fp: string }).fp;
		const { key } = await emu.control.createKey();
		poller.useCredentials({ baseUrl: emu.baseUrl, apiKey: key });
		expect(await poller.tick()).toEqual({ kind: 'null' });
		expect((JSON.parse(poller.stored) as { fp: string }).fp).not.toBe(fp);
		await emu.control.clearRequests();
		const more = await publishFor(3);
		await poller.tick();
		await poller.settle();
		expect(emittedIds(poller.executions)).toEqual([...ours, ...more]);
		expect(await detailRequests()).toHaveLength(0);
	});
});

describe('no answer about the account', () => {
	it.each([
		['500', { kind: 'status', status: 500 }],
		['429 with a Retry-After longer than allowed', { kind: 'status', status: 429, retryAfter: 30 }],
		['a revoked key (401)', undefined],
	] as const)(
		'%s: the poll fails saying so, delivers and stores nothing; the next poll decides',
		async (name, fault) => {
			const other = await otherAccount();
			const below = await publishFor(10, other.accountId);
			const ours = await publishFor(10);
			const poller = host({ startFrom: 'beginning', includeManifest: false });
			await poller.activate();
			const stored = poller.stored;
			const memory = JSON.stringify(poller.memory());
			if (fault) {
				poller.useCredentials(other.credentials);
				await emu.control.injectFault({ route: 'getPublication', ...fault });
			} else {
				const { key } = await emu.control.createKey({ accountId: other.accountId });
				await emu.control.revokeKey(key);
				poller.useCredentials({ baseUrl: emu.baseUrl, apiKey: key });
			}
			const outcome = await poller.tick();
			expect(outcome.kind).toBe('error');
			const error = (outcome as { error: Error & { description?: string } }).error;
			expect(error.message).toBe(
				'The API key of the Image Pack API credential changed, and the trigger could not confirm that it belongs to the same account',
			);
			expect(error.description).toMatch(
				new RegExp(
					`^publication ${ours[ours.length - 1]} could not be checked: .*Nothing was delivered and nothing was skipped: the next poll asks again`,
				),
			);
			expect(`${error.message} ${error.description}`).not.toMatch(/sk_[0-9a-f]{8}/);
			expect(poller.stored).toBe(stored);
			expect(JSON.stringify(poller.memory())).toBe(memory);
			expect(poller.executions).toHaveLength(1);
			if (!fault) poller.useCredentials(other.credentials); // the user fixes the key
			await poller.tick();
			expect({ name, delivered: emittedIds(poller.executions) }).toEqual({
				name,
				delivered: [...ours, ...below],
			});
		},
	);
});

describe('a state saved before fingerprints (version 3, no fp)', () => {
	it('is adopted by the key that meets it: the cursor goes on, nothing twice, no question asked', async () => {
		const ours = await publishFor(40);
		const before = host({ startFrom: 'beginning', includeManifest: false });
		await before.activate();
		// The same state as the package before this change stored it.
		const state = storedState(before.stored);
		delete state.fp;
		delete state.witness;
		const stored = JSON.stringify({ [NODE]: state });
		const more = await publishFor(5);
		const after = host({ startFrom: 'beginning', includeManifest: false }, { stored });
		await emu.control.clearRequests();
		await after.activate();
		expect(emittedIds(after.executions)).toEqual(more);
		expect(await detailRequests()).toHaveLength(0);
		expect(storedState(after.stored)).toMatchObject({
			fp: expect.stringMatching(/^[0-9a-f]{16}$/),
		});
		expect(emittedIds(before.executions)).toEqual(ours);
	});

	it('"now" with nothing delivered yet: adopted too (no fresh start at the upgrade)', async () => {
		await publishFor(10);
		const before = host({ startFrom: 'now', includeManifest: false });
		await before.activate();
		const state = storedState(before.stored);
		delete state.fp;
		delete state.witness;
		const after = host(
			{ startFrom: 'now', includeManifest: false },
			{ stored: JSON.stringify({ [NODE]: state }) },
		);
		await after.activate();
		const next = await publishFor(1);
		await after.tick();
		expect(emittedIds(after.executions)).toEqual(next);
	});
});

describe('the key fingerprint in static data', () => {
	it('is 16 hex digits, never the key; static data stays small', async () => {
		await publishFor(5);
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		expect(poller.stored).not.toContain(emu.apiKey);
		expect(storedState(poller.stored)).toMatchObject({
			fp: expect.stringMatching(/^[0-9a-f]{16}$/),
			witness: 5,
		});
	});

	it('a state that never read a publication starts afresh under another key (there was nothing to lose)', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate(); // an empty account
		const other = await otherAccount();
		const theirs = await publishFor(3, other.accountId);
		poller.useCredentials(other.credentials);
		await emu.control.clearRequests();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(theirs);
		expect(await detailRequests()).toHaveLength(0);
		expect(pollLog.map((entry) => entry.level)).toEqual(['info']);
		expect(pollLog[0].message).toMatch(/it had not read any publication yet/);
	});
});
