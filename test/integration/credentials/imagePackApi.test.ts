/** The credential's test, run the way n8n runs it, against the emulator. */
import { type Emulator, startEmulator } from '../../emulator';
import { runCredentialTest } from '../../harness/n8n';
import { startScriptedServer } from '../../harness/scripted-server';

let emulator: Emulator;

beforeAll(async () => {
	emulator = await startEmulator();
});

afterAll(async () => {
	await emulator.close();
});

it('passes with a valid key, trimming whitespace and a trailing slash', async () => {
	const result = await runCredentialTest({
		baseUrl: `${emulator.baseUrl}/`,
		apiKey: ` ${emulator.apiKey}\n`,
	});
	expect(result).toEqual({ status: 'OK', message: 'Connection successful!' });
	const [request] = await emulator.control.requests({ route: 'listPublications' });
	expect(request.query).toEqual({ limit: '1' });
	expect(request.headers.authorization).toBe(`Bearer ${emulator.apiKey}`);
});

it('tells an invalid or revoked key', async () => {
	const { key } = await emulator.control.createKey({});
	await emulator.control.revokeKey(key);
	const result = await runCredentialTest({ baseUrl: emulator.baseUrl, apiKey: key });
	expect(result.status).toBe('Error');
	expect(result.message).toMatch(/^The API key is missing, invalid, revoked or expired \(401\)/);
	expect(result.message).not.toContain(key);
});

it('tells a valid key that lacks a scope, naming the scope and the operations', async () => {
	const { key } = await emulator.control.createKey({ scopes: ['generate:write', 'assets:read'] });
	const result = await runCredentialTest({ baseUrl: emulator.baseUrl, apiKey: key });
	expect(result.status).toBe('Error');
	expect(result.message).toMatch(/valid but lacks the documents:read scope/);
	expect(result.message).toMatch(
		/Get Publication, Get Many Publications and the Image Pack Trigger/,
	);
});

it('tells an unreachable host', async () => {
	const result = await runCredentialTest({
		baseUrl: 'http://127.0.0.1:9',
		apiKey: emulator.apiKey,
	});
	expect(result).toEqual({ status: 'Error', message: 'ECONNREFUSED' });
});

it('tells a host that is not the Image Pack API', async () => {
	const result = await runCredentialTest({
		baseUrl: `${emulator.baseUrl}/somewhere-else`,
		apiKey: emulator.apiKey,
	});
	expect(result.status).toBe('Error');
	expect(result.message).toMatch(/not with the Image Pack API \(404\)/);
});

describe('redirects: the key never leaves the credential’s origin', () => {
	it.each([301, 302, 303, 307, 308])(
		'a %i is reported, not followed, and the other host sees nothing',
		async (status) => {
			const api = await startScriptedServer();
			const elsewhere = await startScriptedServer();
			try {
				api.script('GET /api/v1/image-pack-publications', (_request, reply) =>
					reply
						.code(status)
						.header('location', `${elsewhere.url}/api/v1/image-pack-publications?limit=1`)
						.send(),
				);
				const result = await runCredentialTest({ baseUrl: api.url, apiKey: emulator.apiKey });
				expect(result.status).toBe('Error');
				expect(result.message).toContain(`answered with a redirect (${status})`);
				expect(api.seen).toHaveLength(1);
				expect(elsewhere.seen).toHaveLength(0);
			} finally {
				await api.close();
				await elsewhere.close();
			}
		},
	);
});
