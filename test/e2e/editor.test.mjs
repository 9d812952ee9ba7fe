/**
 * The editor, as a person uses it: Debian's Chromium (headless, driven by playwright-core) against
 * the sandbox (`npm run sandbox`'s own setup: emulator, pinned n8n 2.41.1 with the package, the
 * credential, the example workflows and the owner account), logged in with the README's account.
 *
 *   npm run test:ui                    this file alone (build + pack first)
 *   npm run test:ui -- --screenshots   also writes the README's pictures to docs/images/
 *
 * Chromium: /usr/bin/chromium, and a CJK font for the Chinese seller notes (Debian's `chromium` and
 * `fonts-noto-cjk`). Missing, they are installed with apt-get when running as root; otherwise the suite
 * skips (no Chromium) or warns (no CJK font) with one line saying what to install. No browser is downloaded.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { conversationScenario, modelCredential } from './agent-scenarios.mjs';
import { chain, node } from './fixtures.mjs';
import { REPO_ROOT } from './n8n.mjs';
import { aptInstall, isRoot, which } from './services.mjs';
import { OWNER, startSandbox } from '../../tools/sandbox.mjs';
import { startScriptedModel } from './scripted-model.mjs';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.UI_SCREENSHOTS === '1';
const SCREENSHOT_DIR = path.join(REPO_ROOT, 'docs', 'images');
const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
const TRIGGER = 'n8n-nodes-imagepack.imagePackTrigger';
/** Generous: n8n's editor on a loaded 2-core machine. Every wait is for a condition, never a sleep. */
const WAIT = 60_000;

/** Debian's packages this suite needs, and how to tell that each is there. */
const BROWSER_PACKAGES = [
	{ name: 'chromium', installed: () => fs.existsSync(CHROMIUM) },
	// The emulator's seller notes are Chinese: without a CJK font Chromium draws them as boxes
	// (docs/images/trigger-output.png). `fc-list` comes with Chromium's fontconfig.
	{ name: 'fonts-noto-cjk', installed: () => Boolean(which('fc-list')) && execFileSync('fc-list', [':lang=zh', 'family']).toString().trim() !== '' },
];

/**
 * Installs the missing packages with apt-get when running as root, the way the queue suite installs
 * PostgreSQL and Redis. Returns the reason to skip the suite (no Chromium), else null; a missing CJK
 * font only costs the pictures their Chinese text, so it is reported and the suite runs.
 */
function browserOrSkipReason() {
	let missing = BROWSER_PACKAGES.filter((pkg) => !pkg.installed()).map((pkg) => pkg.name);
	if (missing.length && isRoot() && which('apt-get')) {
		try {
			aptInstall(missing);
		} catch (error) {
			process.stderr.write(`[ui] apt-get install ${missing.join(' ')} failed: ${String(error.stderr ?? error.message).trim().split('\n').pop()}\n`);
		}
		missing = BROWSER_PACKAGES.filter((pkg) => !pkg.installed()).map((pkg) => pkg.name);
	}
	const install = `sudo apt-get install -y ${missing.join(' ')}, or run as root to let the suite install it`;
	if (missing.includes('chromium')) return `editor suite skipped: ${CHROMIUM} is missing (${install})`;
	if (missing.length) process.stdout.write(`[ui] no CJK font: Chinese text shows as boxes in the pictures (${install})\n`);
	return null;
}

/** Workflows only this suite opens (the examples come with the sandbox). */
const uiWorkflows = [
	chain('uiModelSwitch1', 'UI: model switch', [
		node('Generate', IMAGE_PACK, { resource: 'image', operation: 'generate', prompt: 'A teapot', model: 'nano-banana-2' }),
	]),
	chain('uiValidation01', 'UI: validation before sending', [
		node('Rows', 'n8n-nodes-base.code', { jsCode: 'return [{ json: { ratio: "1:1" } }, { json: { ratio: "4:5" } }];' }, { typeVersion: 2 }),
		node('Generate', IMAGE_PACK, { resource: 'image', operation: 'generate', prompt: 'A brass lamp', model: 'seedream-5-0-pro', ratio: '={{ $json.ratio }}' }),
	]),
	{
		id: 'uiTriggerTest1',
		name: 'UI: new publications',
		nodes: [{ id: 'trigger', name: 'New publication', type: TRIGGER, typeVersion: 1, position: [0, 0], parameters: {} }],
		connections: {},
		settings: { executionOrder: 'v1' },
	},
	chain('uiPicker000001', 'UI: publication picker', [
		node('Pick publication', IMAGE_PACK, { resource: 'publication', operation: 'get', publicationId: { __rl: true, mode: 'list', value: '' } }),
	]),
];

const skipReason = browserOrSkipReason();
if (skipReason) process.stdout.write(`${skipReason}\n`);

describe('the editor in Chromium (n8n 2.41.1, the sandbox)', { skip: skipReason ?? false }, () => {
	let sandbox;
	let model;
	let browser;
	let page;
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-ui-'));

	const byId = (id) => page.getByTestId(id);
	const canvasNode = (name) => page.locator(`[data-test-id="canvas-node"][data-node-name="${name}"]`);
	const parameter = (name) => byId(`parameter-input-${name}`);
	const ndv = () => byId('ndv');
	const outputPanel = () => byId('output-panel');

	/** A test that leaves a picture of the page where it failed (in the temp folder, named in the log). */
	function check(name, body) {
		it(name, async () => {
			try {
				await body();
			} catch (error) {
				const file = path.join(os.tmpdir(), `imagepack-ui-failure-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.png`);
				await page?.screenshot({ path: file }).catch(() => {});
				process.stderr.write(`[ui] page at the failure: ${file}\n`);
				throw error;
			}
		});
	}

	async function screenshot(name, locator = page) {
		if (!SCREENSHOTS) return;
		fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
		const file = path.join(SCREENSHOT_DIR, `${name}.png`);
		await locator.screenshot({ path: file });
		// Smaller files for the repository, losslessly, when Debian's optipng is there.
		if (fs.existsSync('/usr/bin/optipng')) execFileSync('/usr/bin/optipng', ['-quiet', '-o2', file]);
	}

	async function openWorkflow(id) {
		await page.goto(`${sandbox.url}/workflow/${id}`);
		await page.locator('[data-test-id="canvas-node"]').first().waitFor({ timeout: WAIT });
	}

	async function openNode(name) {
		await canvasNode(name).dblclick();
		await ndv().waitFor({ timeout: WAIT });
	}

	async function closeNode() {
		await byId('ndv-close-button').click();
		await ndv().waitFor({ state: 'hidden', timeout: WAIT });
	}

	/** Picks an option of an options parameter by its visible name. */
	async function choose(parameterName, optionName) {
		await parameter(parameterName).click();
		const options = page.locator('.el-select-dropdown__item:visible');
		await options.filter({ has: page.getByText(optionName, { exact: true }) }).first().click();
	}

	/** The names an options parameter offers (opens and closes its dropdown). */
	async function optionsOf(parameterName) {
		const options = page.locator('.el-select-dropdown__item:visible');
		// After another parameter changed, the field re-renders while its options reload: a click can
		// land on the element being replaced, so the list is opened again until it shows.
		const until = Date.now() + WAIT;
		for (;;) {
			await parameter(parameterName).click();
			try {
				await options.first().waitFor({ timeout: 5_000 });
				break;
			} catch (error) {
				if (Date.now() > until) throw error;
				await page.keyboard.press('Escape');
			}
		}
		const names = (await options.allInnerTexts()).map((text) => text.trim().split('\n')[0]);
		await page.keyboard.press('Escape');
		return names;
	}

	/** Waits until an options parameter offers `expected` (after `pick`), then asserts it. */
	async function optionsBecome(parameterName, expected, pick = (names) => names) {
		const until = Date.now() + WAIT;
		let names = pick(await optionsOf(parameterName));
		while (JSON.stringify(names) !== JSON.stringify(expected) && Date.now() < until) {
			await page.waitForTimeout(250); // the options reload through the REST API; poll for them
			names = pick(await optionsOf(parameterName));
		}
		assert.deepEqual(names, expected);
	}

	before(async () => {
		// The AI example's chat model: a scripted one (no language model runs here) that makes an image
		// for a new conversation and refines the last one in a later message, showing each as Markdown.
		model = await startScriptedModel({ scenarios: { chat: conversationScenario }, defaultScenario: 'chat' });
		sandbox = await startSandbox({
			n8nPort: 0,
			emulatorPort: 0,
			dir: path.join(profile, 'n8n'),
			reset: true,
			tarball: process.env.IMAGEPACK_TARBALL,
			workflows: uiWorkflows,
			modelCredential: modelCredential(model),
		});
		const { chromium, selectors } = await import('playwright-core');
		selectors.setTestIdAttribute('data-test-id');
		browser = await chromium.launchPersistentContext(path.join(profile, 'chromium'), {
			executablePath: CHROMIUM,
			headless: true,
			viewport: { width: 1400, height: 900 },
			args: [
				'--no-sandbox',
				'--disable-gpu',
				'--disable-quic',
				'--no-first-run',
				'--disable-background-networking',
				'--disable-component-update',
				'--disable-sync',
			],
		});
		const context = browser;
		context.setDefaultTimeout(WAIT);
		page = await context.newPage();
		// Log in as the README's owner account, through the sign-in form.
		await page.goto(`${sandbox.url}/signin`);
		await byId('emailOrLdapLoginId').locator('input').fill(OWNER.email);
		await byId('password').locator('input').fill(OWNER.password);
		await byId('form-submit-button').click();
		await page.waitForURL((url) => !url.pathname.includes('signin'));
	});

	after(async () => {
		await browser?.close();
		await sandbox?.stop();
		await model?.close();
		if (!process.env.KEEP_E2E) fs.rmSync(profile, { recursive: true, force: true });
	});

	check('the node panel finds Image Pack: the trigger and all four actions, with their names', async () => {
		await page.goto(`${sandbox.url}/workflow/new`);
		await byId('canvas-wrapper').waitFor();
		await page.keyboard.press('n');
		await byId('node-creator-search-bar').fill('Image Pack');
		await byId('node-creator-item-name').filter({ hasText: /^Image Pack$/ }).first().click();
		await page.getByText(/^Actions \(4\)$/).click();
		const creator = byId('node-creator');
		for (const name of ['On new Image Pack event', 'Download a file', 'Generate product images', 'Get a publication', 'Get many publications']) {
			await creator.getByText(name, { exact: true }).waitFor();
		}
		await screenshot('node-panel', byId('node-creator'));
		await page.keyboard.press('Escape');
	});

	check('the scheduled batch example runs from the editor; Generate shows its images under Binary, and View shows one', async () => {
		await openWorkflow('ipxBatchGenerate');
		await byId('execute-workflow-button').click();
		await canvasNode('Save results').getByTestId('canvas-node-status-success').waitFor();
		await openNode('Generate images');
		await outputPanel().getByTestId('radio-button-binary').click();
		// One card per binary of the first item: image_0 and image_1, PNG files with their names.
		const cards = outputPanel().getByTestId('ndv-binary-data_0');
		await cards.nth(1).waitFor();
		const [first, second] = await cards.allInnerTexts();
		for (const [text, key] of [[first, 'image_0'], [second, 'image_1']]) {
			assert.match(text, new RegExp(key));
			assert.match(text, /File Name:\s*\S+\.png/);
			assert.match(text, /Mime Type:\s*image\/png/);
		}
		await screenshot('generate-binary', ndv());
		await cards.first().getByTestId('ndv-view-binary-data').click();
		const image = page.locator('img[src*="binary-data"]').first();
		await image.waitFor();
		await page.waitForFunction((img) => img.complete && img.naturalWidth > 0, await image.elementHandle());
		const size = await image.evaluate((img) => [img.naturalWidth, img.naturalHeight]);
		assert.deepEqual(size, [2048, 2048]);
		await screenshot('generated-image', image);
		await page.keyboard.press('Escape');
	});

	check('switching Model changes what Ratio and Resolution offer (load options via the REST API), Quality and the notice', async () => {
		await openWorkflow('uiModelSwitch1');
		await openNode('Generate');
		const loadOptions = [];
		page.on('request', (request) => {
			if (request.url().includes('/rest/dynamic-node-parameters/options')) loadOptions.push(request.postDataJSON());
		});
		await optionsBecome('ratio', ['1:1', '3:4', '4:5', '16:9', '9:16']);
		assert.equal(await parameter('quality').count(), 0);
		await choose('model', 'Seedream 5.0 Pro (Testing)');
		await optionsBecome('ratio', ['1:1', '3:4', '16:9', '9:16']);
		await optionsBecome('resolution', ['1K', '2K'], (names) => names.slice(1));
		await ndv().getByText(/Seedream 5\.0 Pro: ratios 1:1, 3:4, 16:9, 9:16/).waitFor();
		assert.equal(await parameter('quality').count(), 0);
		await choose('model', 'GPT Image 2');
		await parameter('quality').waitFor();
		await optionsBecome('resolution', ['1K', '2K', '4K'], (names) => names.slice(1));
		assert.ok(loadOptions.some((body) => body?.methodName === 'getRatios' && body?.currentNodeParameters?.model === 'seedream-5-0-pro'));
		await closeNode();
	});

	check('a validation error set by expression shows item, parameter and allowed values; nothing is sent', async () => {
		await openWorkflow('uiValidation01');
		await sandbox.emulator.control.clearRequests();
		await byId('execute-workflow-button').click();
		// The editor reports the failure in its toast, and on the node.
		await page.getByText(/Problem in node .Generate./).waitFor();
		await page.getByText('Item 1: Ratio "4:5" is not allowed for seedream-5-0-pro. Allowed values: 1:1, 3:4, 16:9, 9:16').first().waitFor();
		await canvasNode('Generate').getByTestId('canvas-node-status-mark-error').waitFor();
		assert.deepEqual(await sandbox.emulator.control.requests({ route: 'generate' }), []);
	});

	check("the trigger's Fetch Test Event shows the newest publication with its manifest", async () => {
		await openWorkflow('uiTriggerTest1');
		await openNode('New publication');
		await byId('node-execute-button').click();
		await outputPanel().getByTestId('radio-button-json').click();
		await outputPanel().getByText(/"pack_id": "pk_mugs"/).first().waitFor();
		// The JSON view renders its lines progressively: read it until the manifest is shown.
		const shown = async () => (await outputPanel().innerText()).replace(/\s+/g, ' ');
		const until = Date.now() + WAIT;
		let json = await shown();
		while (!/"manifest": \{ "schemaVersion": 3, "blocks": \[/.test(json) && Date.now() < until) {
			await page.waitForTimeout(250);
			json = await shown();
		}
		assert.match(json, /"id": 3, "pack_id": "pk_mugs", "version": 2,/);
		assert.match(json, /"manifest": \{ "schemaVersion": 3, "blocks": \[/);
		await screenshot('trigger-output', ndv());
		await closeNode();
	});

	check('the publication picker lists the newest first and searches', async () => {
		await openWorkflow('uiPicker000001');
		await openNode('Pick publication');
		const locator = byId('resource-locator-publicationId');
		await locator.getByTestId('rlc-input').click();
		const items = page.getByTestId('rlc-item');
		await items.first().waitFor();
		const names = (await items.allInnerTexts()).map((text) => text.trim());
		assert.match(names[0], /^#3 · pk_mugs v2 · ST-\d+ · \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
		assert.deepEqual(names.map((name) => name.split(' · ')[0]), ['#3', '#2', '#1']);
		await screenshot('publication-picker', ndv());
		await page.getByTestId('rlc-search').fill('totes');
		await page.getByTestId('rlc-item').filter({ hasText: /^#2 · pk_totes v1/ }).waitFor();
		assert.equal(await page.getByTestId('rlc-item').count(), 1);
		await page.getByTestId('rlc-item').first().click();
		await byId('node-execute-button').click();
		await outputPanel().getByTestId('radio-button-json').click();
		await outputPanel().getByText(/"pack_id": "pk_totes"/).first().waitFor();
		await closeNode();
	});

	check('the credential dialog: the test passes with the emulator key, and says clearly what is wrong with a bad key or a missing scope', async () => {
		await openWorkflow('uiModelSwitch1');
		await openNode('Generate');
		await byId('credential-edit-button').click();
		const dialog = byId('editCredential-modal');
		await dialog.waitFor();
		const apiKey = dialog.getByTestId('apiKey').locator('input');
		// n8n tests the credential on save; "More details" shows the credential's own message.
		const failure = async (message) => {
			const more = dialog.getByText('More details');
			const shown = dialog.getByText(message);
			await shown.or(more).first().waitFor();
			if (await more.isVisible()) await more.click();
			await shown.waitFor();
		};
		const save = dialog.getByTestId('credential-save-button');
		const { control, apiKey: goodKey } = sandbox.emulator;
		const limited = await control.createKey({ scopes: ['generate:write', 'assets:read'] });

		await apiKey.fill('sk_wrong_key_for_the_ui_test');
		await save.click();
		await failure(/The API key is missing, invalid, revoked or expired \(401\)/);

		await apiKey.fill(limited.key);
		await save.click();
		await failure(/lacks the documents:read scope \(403 insufficient_scope\)/);

		await apiKey.fill(goodKey);
		await save.click();
		await dialog.getByTestId('credentials-config-container-test-success').waitFor();
		await page.keyboard.press('Escape');
	});

	/** Drags one of the editor's resize handles (picked by its box) by dx, dy. */
	async function dragHandle(pick, dx, dy) {
		const boxes = await byId('resize-handle').evaluateAll((handles) =>
			handles.map((handle) => ({ className: handle.className, ...handle.getBoundingClientRect().toJSON() })),
		);
		const box = boxes.find(pick);
		assert.ok(box, `a resize handle in ${JSON.stringify(boxes)}`);
		const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
		await page.mouse.move(x, y);
		await page.mouse.down();
		await page.mouse.move(x + dx, y + dy, { steps: 10 });
		await page.mouse.up();
	}

	/** The n-th image of the agent's replies, once the browser has loaded it: its src and size. */
	async function shownImage(chat, index) {
		const image = chat.locator('.chat-message-from-bot img').nth(index);
		await image.waitFor();
		await page.waitForFunction((img) => img.complete && img.naturalWidth > 0, await image.elementHandle());
		return image.evaluate((img) => ({ src: img.src, size: [img.naturalWidth, img.naturalHeight] }));
	}

	// Last: it leaves the chat and logs panel open.
	check("the AI example's chat shows the generated image, and a second message refines it", async () => {
		await openWorkflow('ipxAiAgentTool01');
		await byId('workflow-chat-button').click();
		const chat = byId('canvas-chat');
		const input = chat.locator('textarea').first();
		const { control, apiKey, fileBaseUrl } = sandbox.emulator;

		await input.fill('Make a square photo of a green ceramic vase on a linen tablecloth');
		await input.press('Enter');
		const first = await shownImage(chat, 0);
		// The browser loaded it from the signed link: the file host, no key anywhere.
		assert.ok(first.src.startsWith(`${fileBaseUrl}/signed/`), first.src);
		assert.ok(!first.src.includes(apiKey));
		assert.deepEqual(first.size, [1024, 1024]);
		const served = await control.requests({ listener: 'files' });
		assert.ok(served.length > 0 && served.every((request) => request.headers.authorization === undefined));

		await input.fill('Same vase, but with dried flowers in it');
		await input.press('Enter');
		const second = await shownImage(chat, 1);
		assert.notEqual(second.src, first.src);
		const [made, refined] = (await control.turns()).slice(-2);
		// The second generation started from the first image (its file is named after its id), in its session.
		assert.ok(first.src.includes(`/${made.imageIds[0].replace(/^img_/, '')}_`), `${first.src} is ${made.imageIds[0]}`);
		assert.deepEqual(refined.refImageIds, [made.imageIds[0]]);
		assert.equal(refined.sessionId, made.sessionId);

		// A taller, wider chat for the picture: a taller window, the logs panel up, the chat column wider.
		await page.setViewportSize({ width: 1400, height: 1200 });
		await dragHandle((box) => /_top_/.test(box.className), 0, -700);
		const chatBox = await chat.boundingBox();
		await dragHandle((box) => Math.abs(box.x - (chatBox.x + chatBox.width)) < 6 && box.height > 100, 130, 0);
		await chat.locator('.chat-message-from-user').first().scrollIntoViewIfNeeded();
		await screenshot('chat-image', chat);
	});
});
