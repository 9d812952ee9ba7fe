/**
 * Packs the package as npm would publish it, checks the tarball holds only what n8n needs, and runs
 * n8n's verification scanner logic (`analyzePackage` of @n8n/scan-community-package) on it.
 * The scanner's provenance check needs a package published with npm provenance; it cannot run here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { analyzePackage } from '@n8n/scan-community-package/scanner/scanner.mjs';

const root = new URL('../..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'imagepack-scan-'));
try {
	const [{ filename, files }] = JSON.parse(
		execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, encoding: 'utf8' }),
	);
	const paths = files.map((file) => file.path).sort();
	const stray = paths.filter((path) => !/^(dist\/|README\.md$|LICENSE$|package\.json$)/.test(path));
	console.log(`${filename}: ${paths.length} files`);
	if (stray.length) throw new Error(`the tarball holds files outside dist, README, LICENSE, package.json: ${stray.join(', ')}`);
	for (const required of ['README.md', 'LICENSE', 'package.json', 'dist/nodes/ImagePack/ImagePack.node.js', 'dist/credentials/ImagePackApi.credentials.js']) {
		if (!paths.includes(required)) throw new Error(`the tarball lacks ${required}`);
	}
	const unpacked = join(work, 'package');
	execFileSync('tar', ['-xzf', join(work, filename), '-C', work]);
	const result = await analyzePackage(unpacked);
	if (!result.passed) {
		console.error(result.message, result.details ?? '');
		process.exitCode = 1;
	} else {
		console.log(`verification scanner (analyzePackage): passed on ${readdirSync(unpacked).join(', ')}`);
	}
} finally {
	rmSync(work, { recursive: true, force: true });
}
