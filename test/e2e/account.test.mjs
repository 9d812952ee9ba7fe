/**
 * "Same request, same account" in a running n8n 2.41.1: a webhook-started batch (webhook → Split Out →
 * Generate, On Error: Stop Workflow) fails part-way, the user changes the credential through n8n's REST
 * API (the calls the editor makes: create or edit a credential, point the node at it, save) and retries
 * the failed execution with the currently saved workflow (`POST /rest/executions/:id/retry`
 * `{ loadWorkflow: true }`). Every record of the failed execution carries a fingerprint of the key it
 * was made under; under another key an item generated before is returned only when the file endpoint
 * answers the new key's `GET /api/file/<name>` with 302 (same account), else it is reported
 * `other_key` and not sent (docs/retry.md, "Who asks"). Requests are counted at the emulator per item
 * (prompt) and per key, charges read from each account's ledger. Also one credential whose API Key is
 * the expression `{{ $json.apiKey }}` over two accounts' rows (#44). One n8n start for all four cases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { node, startTestEmulator, waitFor } from './fixtures.mjs';
import {
	createUserFolder,
	importCredential,
	importWorkflow,
	ownerEnv,
	packPackage,
	restSession,
	startN8n,
	waitForFinishedExecutions,
} from './n8n.mjs';

const OWNER = { email: 'owner@example.com', password: 'Account-Test-Password-1' };
/** nano-banana-2 at 1K: 12 credits an image. */
const PRICE = 12;
const GENERATE = 'Generate';
const CREDENTIAL_TYPE = 'imagePackApi';

/** A workflow, an account and the credential holding its first key, per case. */
const CASES = {
	replaced: { id: 'e2eAccountNewKey', credentialId: 'e2eAccountCred01' },
	scoped: { id: 'e2eAccountScoped', credentialId: 'e2eAccountCred02' },
	other: { id: 'e2eAccountOther1', credentialId: 'e2eAccountCred03' },
	/** One credential whose API Key is `{{ $json.apiKey }}`: two sellers' rows in one batch (#44). */
	perItem: { id: 'e2eAccountPerItm', credentialId: 'e2eAccountCred04' },
};

/** Four products per case: unique prompts, so the emulator's log tells items and cases apart. */
const products = (name) => Array.from({ length: 4 }, (_, i) => `${name} product ${i + 1}`);

function workflow({ id, credentialId }) {
	const generate = {
		resource: 'image',
		operation: 'generate',
		prompt: '={{ $json.prompt }}',
		model: 'nano-banana-2',
		ratio: '1:1',
		resolution: '1K',
		// A key with only generate:write can still generate: nothing here needs to read files.
		options: { downloadImages: false },
	};
	const to = (name) => [{ node: name, type: 'main', index: 0 }];
	return {
		id,
		name: `e2e: account ${id}`,
		nodes: [
			node(
				'Webhook',
				'n8n-nodes-base.webhook',
				{ httpMethod: 'POST', path: id, responseMode: 'onReceived', options: {} },
				{ typeVersion: 2, webhookId: `${id}-hook` },
			),
			node('Split Out', 'n8n-nodes-base.splitOut', {
				fieldToSplitOut: 'body.prompts',
				options: {},
			}),
			node(GENERATE, 'n8n-nodes-imagepack.imagePack', generate, {
				credentials: { [CREDENTIAL_TYPE]: { id: credentialId, name: `Image Pack (${id})` } },
			}),
		],
		connections: { Webhook: { main: [to('Split Out')] }, 'Split Out': { main: [to(GENERATE)] } },
		settings: { executionOrder: 'v1' },
	};
}

describe('Executions → Retry after the credential was replaced or edited, in a running n8n 2.41.1', () => {
	let emulator;
	let userFolder;
	let n8n;
	let session;
	/** Per case: { accountId, key } of the account the batch started under. */
	const first = {};

	const rest = async (method, route, body) => {
		const answer = await session.request(method, `/rest${route}`, body);
		assert.ok(
			answer.status < 300,
			`${method} ${route}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
		);
		return answer.body.data;
	};

	const newKey = async (accountId, scopes) =>
		(await emulator.control.createKey({ accountId, scopes })).key;

	/**
	 * Per item (prompt): generate requests, by which key and with what status, the account's
	 * succeeded turns, and the credits charged for it.
	 */
	async function perItem(list, accountId) {
		const log = await emulator.control.requests({ route: 'generate' });
		const turns = await emulator.control.turns(accountId);
		return {
			requests: list.map((prompt) => log.filter((entry) => entry.prompt === prompt).length),
			sent: list.map((prompt) =>
				log
					.filter((entry) => entry.prompt === prompt)
					.map((entry) => [entry.headers.authorization?.slice(7), entry.status]),
			),
			turns: list.map((prompt) =>
				turns.filter((t) => t.prompt === prompt && t.status === 'succeeded').map((t) => t.id),
			),
			charged: list.map((prompt) =>
				turns.filter((t) => t.prompt === prompt).reduce((sum, t) => sum + t.charged, 0),
			),
		};
	}

	/** The account's charges in its ledger (credits actually billed). */
	const charged = async (accountId) =>
		(await emulator.control.ledger(accountId)).entries
			.filter((entry) => entry.type === 'charge')
			.reduce((sum, entry) => sum + entry.amount, 0);

	/** File requests (the ownership proof) made with a key: [path, status]. */
	const fileRequests = async (key) =>
		(await emulator.control.requests({ route: 'file' }))
			.filter((entry) => entry.headers.authorization === `Bearer ${key}`)
			.map((entry) => [entry.path, entry.status]);

	/**
	 * Posts the products to the case's webhook and returns the finished execution. `whileSecond` runs
	 * while item 2 is being generated (the emulator holds it 3 s): a key revoked then fails item 3.
	 */
	async function run({ id }, list, whileSecond) {
		if (whileSecond)
			await emulator.control.setGenerationBehaviour({ durationMs: 3_000, promptIncludes: list[1] });
		const response = await waitFor(
			async () => {
				const answer = await fetch(`${n8n.url}/webhook/${id}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ prompts: list.map((prompt) => ({ prompt })) }),
				});
				return answer.status !== 404 && answer;
			},
			{ timeoutMs: 60_000, intervalMs: 500, what: `the webhook ${id} to be registered` },
		);
		assert.equal(response.status, 200, await response.text());
		if (whileSecond) {
			await waitFor(async () => (await perItem(list)).requests[1] === 1, {
				intervalMs: 100,
				what: 'item 2 in flight',
			});
			await whileSecond();
		}
		return (await waitForFinishedExecutions(userFolder.dir, id, 1)).at(-1);
	}

	/** Executions → Retry → Retry with currently saved workflow: the new execution, as stored. */
	async function retry({ id }, execution) {
		const retried = await rest('POST', `/executions/${execution.id}/retry`, {
			loadWorkflow: true,
		});
		return await waitFor(
			async () =>
				(await waitForFinishedExecutions(userFolder.dir, id, 1)).find(
					(e) => String(e.id) === String(retried.id),
				),
			{ timeoutMs: 60_000, what: `the retried execution ${retried.id} to be stored` },
		);
	}

	/** Changes the Generate node and saves the workflow, as the editor's Save does. */
	async function updateGenerate({ id }, change) {
		const saved = await rest('GET', `/workflows/${id}`);
		const nodes = saved.nodes.map((n) => (n.name === GENERATE ? change(n) : n));
		await rest('PATCH', `/workflows/${id}`, { nodes, connections: saved.connections });
	}

	/** Edits the credential's key, as the editor's credential dialog saves it. */
	async function editCredential({ id, credentialId }, apiKey) {
		await rest('PATCH', `/credentials/${credentialId}`, {
			name: `Image Pack (${id})`,
			type: CREDENTIAL_TYPE,
			data: { baseUrl: emulator.baseUrl, apiKey },
		});
	}

	const generateRun = (execution) => execution.run.resultData.runData[GENERATE].at(-1);
	const generateError = (execution) => generateRun(execution)?.error;
	const turnIds = (execution) => execution.nodeOutput(GENERATE).map((item) => item.json.turn_id);

	before(async () => {
		emulator = await startTestEmulator();
		const credentials = [];
		for (const [name, { id, credentialId }] of Object.entries(CASES)) {
			const { accountId } = await emulator.control.createAccount({ credits: 100_000 });
			first[name] = { accountId, key: await newKey(accountId) };
			credentials.push({
				id: credentialId,
				name: `Image Pack (${id})`,
				type: CREDENTIAL_TYPE,
				data: {
					baseUrl: emulator.baseUrl,
					apiKey: name === 'perItem' ? '={{ $json.apiKey }}' : first[name].key,
				},
			});
		}
		const tarball = process.env.IMAGEPACK_TARBALL ?? (await packPackage());
		userFolder = await createUserFolder({ tarball });
		await importCredential(userFolder.dir, credentials);
		const workflows = Object.values(CASES).map(workflow);
		await importWorkflow(userFolder.dir, workflows);
		n8n = await startN8n({
			userFolder: userFolder.dir,
			echo: !!process.env.E2E_ECHO,
			env: {
				N8N_SECURE_COOKIE: 'false',
				...ownerEnv({ ...OWNER, firstName: 'Account', lastName: 'Test' }),
			},
		});
		session = await restSession(n8n.url, OWNER);
		for (const { id } of workflows) {
			const { versionId } = await rest('GET', `/workflows/${id}`);
			await rest('POST', `/workflows/${id}/activate`, { versionId });
		}
	});

	after(async () => {
		await n8n?.stop();
		await emulator?.close();
		userFolder?.cleanup();
	});

	it('a new credential with a new key of the same account: items generated before are returned, not paid again', async () => {
		const list = products('replaced');
		const { accountId, key } = first.replaced;
		// The key is revoked while item 2 is generated: item 3 is refused (401 invalid_api_key).
		const failed = await run(CASES.replaced, list, () => emulator.control.revokeKey(key));
		assert.equal(failed.status, 'error');
		assert.equal(generateError(failed).context?.code, 'invalid_api_key');
		assert.deepEqual((await perItem(list, accountId)).sent, [
			[[key, 200]],
			[[key, 200]],
			[[key, 401]],
			[],
		]);

		// A new credential with a new key of the same account; the node now uses it; saved.
		const replacement = await newKey(accountId);
		const credential = await rest('POST', '/credentials', {
			name: 'Image Pack (new key)',
			type: CREDENTIAL_TYPE,
			data: { baseUrl: emulator.baseUrl, apiKey: replacement },
		});
		await updateGenerate(CASES.replaced, (n) => ({
			...n,
			credentials: { [CREDENTIAL_TYPE]: { id: credential.id, name: credential.name } },
		}));
		const retried = await retry(CASES.replaced, failed);
		assert.equal(retried.mode, 'retry');
		assert.equal(retried.status, 'success');

		const seen = await perItem(list, accountId);
		// Items 1 and 2 not sent again; item 3 (refused, nothing charged) and item 4 sent with the new key.
		assert.deepEqual(seen.sent, [
			[[key, 200]],
			[[key, 200]],
			[
				[key, 401],
				[replacement, 200],
			],
			[[replacement, 200]],
		]);
		assert.deepEqual(
			seen.turns.map((turns) => turns.length),
			[1, 1, 1, 1],
		);
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE, PRICE]);
		assert.equal(await charged(accountId), 4 * PRICE);
		assert.deepEqual(turnIds(retried), seen.turns.flat(), 'all four, in order, items 1–2 as paid');
		// What proved the account: item 1's first file, asked with the new key, answered 302 — which
		// proves it for every record made under the old key (one request for the run, not one per item).
		const turns = await emulator.control.turns(accountId);
		const files = await emulator.control.images(accountId);
		const fileOf = (prompt) => {
			const turn = turns.find((t) => t.prompt === prompt);
			return files.find((image) => image.id === turn.imageIds[0]).url;
		};
		assert.deepEqual(await fileRequests(replacement), [[fileOf(list[0]), 302]]);
		assert.ok(
			generateRun(retried).hints?.some((hint) =>
				/^Generated by an earlier try under another API key of the same account/.test(hint.message),
			),
			JSON.stringify(generateRun(retried).hints),
		);
	});

	it('the same credential edited to a new key with only generate:write: nothing paid again, items reported other_key', async () => {
		const list = products('scoped');
		const { accountId, key } = first.scoped;
		const failed = await run(CASES.scoped, list, () => emulator.control.revokeKey(key));
		assert.equal(failed.status, 'error');
		assert.deepEqual((await perItem(list, accountId)).requests, [1, 1, 1, 0]);

		// The credential now holds a new key of the same account that cannot read files, and failed
		// items leave by the error output.
		const scoped = await newKey(accountId, ['generate:write']);
		await editCredential(CASES.scoped, scoped);
		await updateGenerate(CASES.scoped, (n) => ({ ...n, onError: 'continueErrorOutput' }));
		const retried = await retry(CASES.scoped, failed);
		assert.equal(retried.status, 'success');

		const seen = await perItem(list, accountId);
		assert.deepEqual(seen.sent, [
			[[key, 200]],
			[[key, 200]],
			[
				[key, 401],
				[scoped, 200],
			],
			[[scoped, 200]],
		]);
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE, PRICE]);
		assert.equal(await charged(accountId), 4 * PRICE);
		const reported = retried.nodeOutput(GENERATE, 1);
		assert.deepEqual(
			reported.map((item) => [item.json.prompt, item.json.error.code, item.json.error.charge]),
			list.slice(0, 2).map((prompt) => [prompt, 'other_key', 'may_have_been_charged']),
		);
		assert.deepEqual(
			reported.map((item) => item.pairedItem),
			[{ item: 0 }, { item: 1 }],
		);
		assert.match(
			reported[0].json.error.message,
			/^Not sent again: an earlier try made this generation under another API key/,
		);
		assert.deepEqual(turnIds(retried), [...seen.turns[2].slice(-1), ...seen.turns[3]]);
		// The proof was asked and could not be given: the key lacks assets:read (403).
		assert.deepEqual(
			(await fileRequests(scoped)).map(([, status]) => status),
			[403, 403],
		);
	});

	it('the same credential edited to another account’s key: never answered with the first account’s images, sent there only when asked', async () => {
		const list = products('other');
		const { accountId, key } = first.other;
		// Two images' worth of credits: item 3 is refused (402 insufficient_credits).
		await emulator.control.setCredits(accountId, 2 * PRICE + 5);
		const failed = await run(CASES.other, list);
		assert.equal(failed.status, 'error');
		assert.equal(generateError(failed).context?.code, 'insufficient_credits');
		assert.deepEqual((await perItem(list, accountId)).requests, [1, 1, 1, 0]);

		// The credential now holds another account's key.
		const { accountId: otherAccount } = await emulator.control.createAccount({ credits: 100_000 });
		const otherKey = await newKey(otherAccount);
		await editCredential(CASES.other, otherKey);
		const refused = await retry(CASES.other, failed);
		assert.equal(refused.status, 'error');
		const error = generateError(refused);
		assert.match(
			error.message,
			/^Not sent again: an earlier try made this generation under another API key/,
		);
		assert.equal(error.context?.code, 'other_key');
		assert.equal(error.context?.charge, 'may_have_been_charged');
		assert.match(
			error.description ?? '',
			/Also reported maybe charged: items 1 \(other_key\)/,
			'both reported, in one error',
		);
		assert.deepEqual(refused.nodeOutput(GENERATE), [], 'no output: none of its images');
		// Items 1–2 not sent; items 3–4, which the first account never generated, sent to the other.
		assert.deepEqual((await perItem(list)).requests, [1, 1, 2, 1], 'items 1–2 not sent');
		// The other account's key asked for each item's first file: 404, not its file (a 404 proves
		// nothing: the next item asks again).
		assert.deepEqual(
			(await fileRequests(otherKey)).map(([, status]) => status),
			[404, 404],
		);
		assert.equal(await charged(otherAccount), 2 * PRICE);

		// The user checked the first account's sessions and asks for them: Resend Uncertain Generations,
		// and retries the execution that reported them.
		await updateGenerate(CASES.other, (n) => ({
			...n,
			parameters: { ...n.parameters, options: { ...n.parameters.options, resendUncertain: true } },
		}));
		const resent = await retry(CASES.other, refused);
		assert.equal(resent.status, 'success');
		const seen = await perItem(list, otherAccount);
		assert.deepEqual(seen.sent, [
			[
				[key, 200],
				[otherKey, 200],
			],
			[
				[key, 200],
				[otherKey, 200],
			],
			[
				[key, 402],
				[otherKey, 200],
			],
			[[otherKey, 200]],
		]);
		// Each item generated once under the other account; the first account paid for items 1–2 only.
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE, PRICE]);
		assert.equal(await charged(otherAccount), 4 * PRICE);
		assert.equal(await charged(accountId), 2 * PRICE);
		const firstTurns = (await emulator.control.turns(accountId)).map((turn) => turn.id);
		assert.deepEqual(turnIds(resent), seen.turns.flat());
		assert.ok(
			turnIds(resent).every((turn) => !firstTurns.includes(turn)),
			'none of the first account’s generations',
		);
	});
	it('one credential with an API Key per row: each row generated in, and charged to, its own account', async () => {
		const a = first.perItem;
		const { accountId: other } = await emulator.control.createAccount({ credits: 100_000 });
		const b = { accountId: other, key: await newKey(other) };
		const rows = [a, b, a, b].map((seller, index) => ({
			prompt: `per item product ${index + 1}`,
			apiKey: seller.key,
		}));
		const response = await fetch(`${n8n.url}/webhook/${CASES.perItem.id}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ prompts: rows }),
		});
		assert.equal(response.status, 200, await response.text());
		const execution = (await waitForFinishedExecutions(userFolder.dir, CASES.perItem.id, 1)).at(-1);
		assert.equal(execution.status, 'success');
		const list = rows.map((row) => row.prompt);
		const seen = await perItem(list, a.accountId);
		assert.deepEqual(seen.sent, [[[a.key, 200]], [[b.key, 200]], [[a.key, 200]], [[b.key, 200]]]);
		assert.equal(await charged(a.accountId), 2 * PRICE);
		assert.equal(await charged(b.accountId), 2 * PRICE);
		const output = JSON.stringify(execution.nodeOutput(GENERATE));
		assert.ok(!output.includes(a.key) && !output.includes(b.key), 'no key in the output');
	});
});
