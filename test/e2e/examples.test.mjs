/**
 * The example workflows users import (examples/*.json, linked from the README): well-formed,
 * free of credentials, made of node types and versions the pinned n8n knows, and importable. The AI
 * example is checked statically here, plus what n8n makes of the Image Pack tool node; it runs in agent.test.mjs.
 * (The batch example runs in actions.test.mjs, the listing example in trigger.test.mjs.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { PACKAGE_NODE_PREFIX, emulatorCredential, exampleWorkflows, startTestEmulator, withCredential } from './fixtures.mjs';
import { createUserFolder, importCredential, importWorkflow, installPaths, n8nCli, packPackage } from './n8n.mjs';

const examples = exampleWorkflows();

describe('example workflows', () => {
	let userFolder;
	let nodeTypes;
	let exported;

	before(async () => {
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		const dir = userFolder.dir;
		const nodesFile = path.join(dir, 'nodes.json');
		const listed = await n8nCli(['export:nodes', `--output=${nodesFile}`], { userFolder: dir, env: { N8N_LOG_LEVEL: 'error' } });
		assert.equal(listed.code, 0, listed.stdout + listed.stderr);
		nodeTypes = JSON.parse(fs.readFileSync(nodesFile, 'utf8'));

		// Imported the way the sandbox imports them: with a credential filled in (the emulator is not called).
		const emulator = await startTestEmulator();
		const credential = emulatorCredential(emulator);
		await emulator.close();
		await importCredential(dir, credential);
		await importWorkflow(dir, examples.map(({ workflow }) => withCredential(workflow, credential)));
		const workflowsFile = path.join(dir, 'workflows.json');
		const result = await n8nCli(['export:workflow', '--all', `--output=${workflowsFile}`], { userFolder: dir });
		assert.equal(result.code, 0, result.stdout + result.stderr);
		exported = new Map(JSON.parse(fs.readFileSync(workflowsFile, 'utf8')).map((workflow) => [workflow.id, workflow]));
	});

	after(() => userFolder?.cleanup());

	it('there are the four documented examples', () => {
		assert.deepEqual(
			examples.map(({ file }) => file),
			['ai-agent-tool.json', 'mcp-server.json', 'publish-to-listing.json', 'scheduled-batch-generation.json'],
		);
	});

	for (const { file, workflow } of examples) {
		describe(file, () => {
			it('is well-formed: explicit id, unique node names and ids, connections between existing nodes', () => {
				assert.match(workflow.id, /^[A-Za-z0-9]{16}$/);
				assert.match(workflow.name, /^Image Pack: /);
				// `n8n import:workflow` of n8n 1.100 and 2.0 fails without them (the editor's import does not need them).
				assert.equal(workflow.active, false);
				assert.match(workflow.versionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
				assert.equal(examples.filter((other) => other.workflow.versionId === workflow.versionId).length, 1, 'a versionId of its own');
				const names = workflow.nodes.map((n) => n.name);
				assert.equal(new Set(names).size, names.length);
				assert.equal(new Set(workflow.nodes.map((n) => n.id)).size, names.length);
				for (const [from, outputs] of Object.entries(workflow.connections)) {
					assert.ok(names.includes(from), `connection from unknown node ${from}`);
					for (const targets of Object.values(outputs).flat()) {
						for (const target of targets) assert.ok(names.includes(target.node), `connection to unknown node ${target.node}`);
					}
				}
			});

			it('carries no credentials and explains itself in sticky notes', () => {
				assert.ok(workflow.nodes.every((n) => !n.credentials), 'credentials are picked by the user');
				assert.doesNotMatch(JSON.stringify(workflow), /sk_[A-Za-z0-9]/, 'no API key');
				const notes = workflow.nodes.filter((n) => n.type === 'n8n-nodes-base.stickyNote');
				assert.ok(notes.length >= 2);
				assert.match(notes[0].parameters.content, /^## /);
			});

			it('uses node types and versions that n8n 2.41.1 knows, and imports', () => {
				for (const n of workflow.nodes) {
					const type = nodeTypes.find((t) => t.name === n.type && [t.version].flat().includes(n.typeVersion));
					assert.ok(type, `${n.name}: ${n.type} v${n.typeVersion} is not known to n8n`);
				}
				const imported = exported.get(workflow.id);
				assert.ok(imported, 'imported');
				assert.equal(imported.name, workflow.name);
				assert.deepEqual(imported.nodes.map((n) => n.name), workflow.nodes.map((n) => n.name));
				for (const n of imported.nodes.filter((n) => n.type.startsWith(PACKAGE_NODE_PREFIX))) {
					assert.equal(n.credentials?.imagePackApi?.id, 'imagePackEmuCred');
				}
			});
		});
	}

	it('AI example: the Image Pack tool node is an AI tool exposing the Generate parameters; the agent gets model and tools', () => {
		const tool = nodeTypes.find((t) => t.name === 'n8n-nodes-imagepack.imagePackTool');
		assert.ok(tool, 'n8n derives the tool variant from usableAsTool');
		assert.deepEqual(tool.outputs, ['ai_tool']);
		const properties = tool.properties.map((p) => p.name);
		for (const name of ['toolDescription', 'resource', 'operation', 'prompt', 'model', 'ratio', 'resolution', 'n', 'referenceImageIds', 'sessionId', 'options']) {
			assert.ok(properties.includes(name), `tool property ${name}`);
		}
		// The node declares its own per-operation tool descriptions, so n8n adds no "Set Automatically" switch.
		assert.ok(!properties.includes('descriptionType'));
		assert.match(tool.description, /Generate e-commerce product images/);

		const workflow = examples.find(({ file }) => file === 'ai-agent-tool.json').workflow;
		const agent = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.agent');
		assert.equal(agent.typeVersion, 3, 'AI Agent 3: current, and known to n8n 1.123 too');
		const tools = workflow.nodes.filter((n) => n.type === 'n8n-nodes-imagepack.imagePackTool');
		assert.deepEqual(tools.map((n) => `${n.parameters.resource}.${n.parameters.operation}`), ['image.generate', 'publication.get']);
		const toolNode = tools[0];
		assert.match(toolNode.parameters.prompt, /\$fromAI\('prompt'/);
		assert.equal(toolNode.parameters.toolDescription, undefined, 'the node\'s own description reaches the model');
		assert.equal(toolNode.parameters.options.downloadImages, undefined, 'as a tool it downloads nothing unless asked');
		assert.ok(toolNode.parameters.options.maxCreditsPerItem > 0, 'a budget guard the agent cannot change');
		assert.ok(toolNode.parameters.options.maxCreditsPerExecution > 0, 'a cap on what one chat message may spend');
		for (const n of tools) assert.deepEqual(workflow.connections[n.name].ai_tool[0][0], { node: 'AI Agent', type: 'ai_tool', index: 0 });
		const model = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.lmChatOpenAi');
		assert.deepEqual(workflow.connections[model.name].ai_languageModel[0][0], { node: 'AI Agent', type: 'ai_languageModel', index: 0 });
	});

	it('MCP example: Bearer auth (never open), the Generate tool answers in time and is capped per hour, Get Publication beside it', () => {
		const workflow = examples.find(({ file }) => file === 'mcp-server.json').workflow;
		const trigger = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.mcpTrigger');
		assert.equal(trigger.typeVersion, 2, 'Streamable HTTP');
		assert.equal(trigger.parameters.authentication, 'bearerAuth');
		assert.ok(trigger.webhookId);
		const tools = workflow.nodes.filter((n) => n.type === 'n8n-nodes-imagepack.imagePackTool');
		assert.deepEqual(tools.map((n) => `${n.parameters.resource}.${n.parameters.operation}`), ['image.generate', 'publication.get']);
		for (const n of tools) assert.deepEqual(workflow.connections[n.name].ai_tool[0][0], { node: trigger.name, type: 'ai_tool', index: 0 });
		const { options } = tools[0].parameters;
		assert.ok(options.answerWithinSeconds > 0 && options.answerWithinSeconds < 60, 'answered before a client gives up (60 s)');
		assert.ok(options.maxCreditsPerHour > 0, 'a cap that holds across calls');
		assert.ok(options.maxCreditsPerItem > 0);
		assert.match(options.handle, /\$fromAI\('handle', .*, 'string', ''\)/, 'the handle comes back as an optional argument');
		const tool = nodeTypes.find((t) => t.name === 'n8n-nodes-imagepack.imagePackTool');
		const shown = tool.properties.filter((p) => p.name === 'options').flatMap((p) => p.options.map((o) => o.name));
		for (const name of ['answerWithinSeconds', 'handle', 'maxCreditsPerHour']) assert.ok(shown.includes(name), `tool option ${name}`);
	});

	it('AI example as a conversation: Simple Memory on the agent, images shown as Markdown, the chat private', () => {
		const workflow = examples.find(({ file }) => file === 'ai-agent-tool.json').workflow;
		const memory = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.memoryBufferWindow');
		assert.ok(memory, 'Simple Memory');
		assert.deepEqual(workflow.connections[memory.name].ai_memory[0][0], { node: 'AI Agent', type: 'ai_memory', index: 0 });
		const { systemMessage } = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.agent').parameters.options;
		assert.match(systemMessage, /Markdown image: !\[short description\]\(its url from image_links\)/);
		assert.match(systemMessage, /pass that image's id \(images\[\]\.id\) as referenceImageIds and its session_id as sessionId/);
		const trigger = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.chatTrigger');
		assert.notEqual(trigger.parameters.public, true, 'a public chat would let anyone spend the credits');
	});

	it("n8n's node catalog (the AI builders' view) shows the builder hints of both nodes, the tool variant and their parameters", () => {
		const { require } = pinned();
		const { NodeTypeParser, formatNodeResult } = require('@n8n/ai-utilities/node-catalog');
		const { generatePropertyJSDoc } = require('@n8n/workflow-sdk');
		const parser = new NodeTypeParser(nodeTypes);
		const shown = (id) => formatNodeResult(parser, id) ?? '';
		assert.match(shown('n8n-nodes-imagepack.imagePack'), /@builderHint .*images\[\]\.id as Reference Image IDs and its session_id as Session ID/);
		assert.match(shown('n8n-nodes-imagepack.imagePack'), /@relatedNodes\n\s+- n8n-nodes-imagepack\.imagePackTrigger: /);
		assert.match(shown('n8n-nodes-imagepack.imagePackTool'), /@builderHint Connect as a tool of the AI Agent\..*Markdown/);
		assert.match(shown('n8n-nodes-imagepack.imagePackTool'), /- @n8n\/n8n-nodes-langchain\.memoryBufferWindow: /);
		assert.match(shown('n8n-nodes-imagepack.imagePackTrigger'), /@builderHint Polls for newly published image packs.*publication get with the item's id/);
		const action = nodeTypes.find((t) => t.name === 'n8n-nodes-imagepack.imagePack');
		const property = (name) => action.properties.find((p) => p.name === name);
		assert.match(generatePropertyJSDoc(property('referenceImageIds')), /@builderHint To refine the images of an earlier Generate.*fromAi\('referenceImageIds'/);
		assert.match(generatePropertyJSDoc(property('sessionId')), /@builderHint Map the session_id of the Generate whose images are refined/);
	});
});

/** Requires from the pinned n8n's own packages (its node catalog and workflow SDK). */
function pinned() {
	return { require: createRequire(path.join(installPaths().dir, 'node_modules', 'n8n', 'package.json')) };
}
