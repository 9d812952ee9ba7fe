/**
 * Packs the package as npm would publish it, checks the tarball holds only what n8n needs, and runs
 * n8n's verification scanner logic (`analyzePackage` of @n8n/scan-community-package) the way its
 * `analyzePackageByName` does: the source checkout with SOURCE_FILE_PATTERNS and the unpacked tarball
 * with its compiled `.js` and package.json. Offline, the source leg lints this checkout instead of the
 * commit named by npm provenance; the provenance check itself needs a published package.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SOURCE_FILE_PATTERNS, analyzePackage } from '@n8n/scan-community-package/scanner/scanner.mjs';

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
	const legs = [
		['source (this checkout)', await analyzePackage(root, SOURCE_FILE_PATTERNS)],
		['tarball', await analyzePackage(unpacked, ['**/*.js', 'package.json'])],
	];
	for (const [leg, result] of legs) {
		if (result.passed) {
			console.log(`verification scanner, ${leg}: passed`);
		} else {
			console.error(`verification scanner, ${leg}: ${result.message}\n${result.details ?? ''}`);
			process.exitCode = 1;
		}
	}
} finally {
	rmSync(work, { recursive: true, force: true });
}
