/**
 * Issue #44: the key changes before the trigger read any publication (Start From "now" on an account
 * that had none). There is no publication to ask the API about, so the new key's publications are
 * judged against when the old key last found the account empty (trigger/noWitness.ts): one from
 * before that is another account's; only later ones cannot tell, and are delivered rather than lost.
 * Real n8n poll contexts against the emulator.
 */
import { pollLog } from '../../harness/n8n';
import { emittedIds, range, useTrigger } from './helpers';

const { emu, host } = useTrigger();

const NODE = 'node:Image Pack Trigger';
const HOUR = 3_600_000;

beforeEach(() => {
	pollLog.length = 0;
});

const asKey = (apiKey: string) => ({ baseUrl: emu.baseUrl, apiKey });
const warnings = () => pollLog.filter((entry) => entry.level === 'warn').map((e) => e.message);
const storedState = (stored: string) => JSON.parse(stored)[NODE] as Record<string, unknown>;

/** A new account with a key of its own. */
async function account(keyOptions: { expiresAt?: number; scopes?: string[] } = {}) {
	const { accountId } = await emu.control.createAccount();
	const { key } = await emu.control.createKey({ accountId, ...keyOptions });
	return { accountId, key, credentials: asKey(key) };
}

/** `count` publications of `accountId`, published at `publishedAt` (default: now); their ids. */
async function publishFor(count: number, accountId: string, publishedAt?: number) {
	const { firstId, lastId } = await emu.control.publishBulk({ accountId, count, publishedAt });
	return range(firstId, lastId);
}

/** A "now" trigger activated on an account without publications: it stores no witness. */
async function activatedEmpty(keyOptions: { expiresAt?: number } = {}, stored?: string) {
	const first = await account(keyOptions);
	const poller = host({ startFrom: 'now', includeManifest: false }, { stored });
	poller.useCredentials(first.credentials);
	await poller.activate();
	expect(storedState(poller.stored)).not.toHaveProperty('witness');
	expect(storedState(poller.stored)).toHaveProperty('emptyAt');
	return { first, poller };
}

describe('a new key of the same account before any publication was delivered', () => {
	it('the key expired, packs were published, a new key: every pack since activation is delivered once (#44)', async () => {
		const { now } = await emu.control.now();
		const { first, poller } = await activatedEmpty({ expiresAt: now + 60_000 });
		expect(await poller.tick()).toEqual({ kind: 'null' });
		await emu.control.advanceClock(120_000); // the key expires
		expect((await poller.tick()).kind).toBe('error');
		const packs = await publishFor(3, first.accountId);
		const { key } = await emu.control.createKey({ accountId: first.accountId });
		poller.useCredentials(asKey(key));
		await poller.tick();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(packs);
		// No publication could prove the account: the log says what the trigger did and why.
		expect(warnings()).toHaveLength(1);
		expect(warnings()[0]).toMatch(
			/API key changed before the trigger read any publication, and no publication can prove whose account the new key is: .*The trigger goes on as the same account, so none of them is lost/,
		);
		const more = await publishFor(2, first.accountId);
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([...packs, ...more]);
		expect(storedState(poller.stored)).not.toHaveProperty('emptyAt');
	});

	it('n8n restarted in between: the activation\'s "empty" is enough, nothing lost', async () => {
		const { first, poller } = await activatedEmpty();
		await emu.control.revokeKey(first.key);
		const packs = await publishFor(2, first.accountId);
		const { key } = await emu.control.createKey({ accountId: first.accountId });
		poller.useCredentials(asKey(key));
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(packs);
	});

	it('a publication dated before activation that committed late (within the margin) is delivered', async () => {
		const first = await account();
		const late = await emu.control.publish({ accountId: first.accountId, commit: false });
		const poller = host({ startFrom: 'now', includeManifest: false });
		poller.useCredentials(first.credentials);
		await poller.activate(); // the pending one is invisible: the account looks empty
		await emu.control.commitPublication(late.id);
		await emu.control.revokeKey(first.key);
		const { key } = await emu.control.createKey({ accountId: first.accountId });
		poller.useCredentials(asKey(key));
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([late.id]);
	});

	it('the account still has none: the key is adopted without a warning, its next publication delivered', async () => {
		const { first, poller } = await activatedEmpty();
		const { key } = await emu.control.createKey({ accountId: first.accountId });
		poller.useCredentials(asKey(key));
		expect(await poller.tick()).toEqual({ kind: 'null' });
		expect(pollLog.map((entry) => entry.level)).toEqual(['info']);
		expect(pollLog[0].message).toMatch(/this key's account has none either/);
		const next = await publishFor(1, first.accountId);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(next);
	});

	it('the list does not answer the new key (no documents:read): the poll fails, nothing stored; fixed, it delivers', async () => {
		const { first, poller } = await activatedEmpty();
		const packs = await publishFor(2, first.accountId);
		const stored = poller.stored;
		const bare = await emu.control.createKey({ accountId: first.accountId, scopes: [] });
		poller.useCredentials(asKey(bare.key));
		const outcome = await poller.tick();
		expect(outcome.kind).toBe('error');
		const error = (outcome as { error: Error & { description?: string } }).error;
		expect(error.message).toMatch(/could not confirm that it belongs to the same account/);
		expect(error.description).toMatch(/^its publication list could not be read: .*documents:read/);
		expect(`${error.message} ${error.description}`).not.toMatch(/sk_[0-9a-f]{8}/);
		expect(poller.stored).toBe(stored);
		const { key } = await emu.control.createKey({ accountId: first.accountId });
		poller.useCredentials(asKey(key));
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(packs);
	});
});

describe("another account's key before any publication was delivered", () => {
	it("an account publishing since before activation: only its publications from now on, never the first account's", async () => {
		const other = await account();
		await publishFor(5, other.accountId, Date.now() - 24 * HOUR);
		const { first, poller } = await activatedEmpty();
		await publishFor(2, other.accountId); // after activation, before the change
		poller.useCredentials(other.credentials);
		expect(await poller.tick()).toEqual({ kind: 'null' });
		expect(warnings()).toHaveLength(1);
		expect(warnings()[0]).toMatch(
			/belongs to another account than the one this trigger read so far \(its publication 1 dates from .*, and this trigger last found its account without publications at .*\)\. The trigger starts afresh as Start From says: only publications from now on are delivered\./,
		);
		await poller.restart(); // asked again from the stored state: the same decision
		expect(warnings()).toHaveLength(2);
		await publishFor(1, first.accountId); // the first account's: not this key's
		const next = await publishFor(1, other.accountId);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(next);
	});

	it('an account with no publication: adopted like a fresh start, its publications from now on', async () => {
		const { poller } = await activatedEmpty();
		const other = await account();
		poller.useCredentials(other.credentials);
		expect(await poller.tick()).toEqual({ kind: 'null' });
		const next = await publishFor(2, other.accountId);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(next);
	});

	describe('an account whose publications all date from after the first was last seen empty', () => {
		/** A state that found its account empty two days ago; the other account published a day ago. */
		async function twoDaysOld() {
			const { first, poller } = await activatedEmpty();
			const state = { ...storedState(poller.stored), emptyAt: Date.now() - 48 * HOUR };
			const other = await account();
			const theirs = await publishFor(3, other.accountId, Date.now() - 24 * HOUR);
			return { first, other, theirs, stored: JSON.stringify({ [NODE]: state }) };
		}

		it('undecidable: it goes on as the same account, so they are delivered, with a warning saying so', async () => {
			const { other, theirs, stored } = await twoDaysOld();
			const poller = host({ startFrom: 'now', includeManifest: false }, { stored });
			poller.useCredentials(other.credentials);
			await poller.activate();
			expect(emittedIds(poller.executions)).toEqual(theirs);
			expect(warnings()[0]).toMatch(
				/Were the key another account's, its publications since then are delivered as well/,
			);
		});

		it('a later poll of the old key that found its account empty tells them apart: afresh from now', async () => {
			const { first, other, stored } = await twoDaysOld();
			const poller = host({ startFrom: 'now', includeManifest: false }, { stored });
			poller.useCredentials(first.credentials);
			await poller.activate(); // empty again: remembered (and saved at activation)
			expect(storedState(poller.stored).emptyAt).toBeGreaterThan(Date.now() - HOUR);
			poller.useCredentials(other.credentials);
			expect(await poller.tick()).toEqual({ kind: 'null' });
			expect(warnings()[0]).toMatch(/another account/);
			const next = await publishFor(1, other.accountId);
			await poller.tick();
			expect(emittedIds(poller.executions)).toEqual(next);
		});
	});
});
