/**
 * How the compatibility suite gets an n8n user folder with the packed package in it: the README's
 * by-hand install (`npm install n8n-nodes-imagepack` in `~/.n8n/nodes`), from a local registry serving the
 * tarball, with npm run by the Node of the profile. install.test.mjs checks that this lands the package
 * alone on Node 20, 22 and 24 and tests n8n's own installer; the suite then runs on what it installed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { installPaths } from '../../tools/n8n-install.mjs';
import { installByHand, tempDir } from './install.mjs';
import { startRegistry } from './registry.mjs';

/** A fresh user folder holding the package as the README installs it: { dir, n8nDir, packageDir, cleanup() }. */
export async function prepareUserFolder({ tarball, profile = 'default' }) {
	const dir = tempDir('user');
	const registry = await startRegistry({ tarball });
	try {
		const installed = await installByHand({ registry, nodeBin: installPaths(profile).nodeBin, dir });
		assert.equal(installed.code, 0, `npm install failed:\n${installed.stdout}\n${installed.stderr}`);
		assert.deepEqual(installed.modules, [registry.name], 'the package lands alone');
		fs.rmSync(path.join(dir, 'npm-cache'), { recursive: true, force: true });
		return {
			dir,
			n8nDir: path.join(dir, '.n8n'),
			packageDir: path.join(installed.nodesDir, 'node_modules', registry.name),
			cleanup() {
				if (!process.env.KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
			},
		};
	} finally {
		await registry.stop();
	}
}
