/**
 * What the editor asks a running n8n over its REST API, in the form each n8n of the matrix expects
 * (read in each version's compiled controllers and request DTOs under node_modules/n8n/dist and
 * @n8n/api-types/dist): the owner's setup, the resource locator's search, Fetch Test Event.
 */
import { waitFor } from '../e2e/fixtures.mjs';
import { restSession } from '../e2e/n8n.mjs';

/** [major, minor, patch] of a version string, for comparisons. */
const parts = (version) => version.split('.').map(Number);
export const atLeast = (version, wanted) => {
	const [a, b] = [parts(version), parts(wanted)];
	for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
	return true;
};

/**
 * Creates the owner account and logs in. `POST /rest/owner/setup` (what the editor's setup page sends)
 * exists in every version of the matrix; N8N_INSTANCE_OWNER_MANAGED_BY_ENV, which the e2e suites use,
 * does not exist in 1.x and 2.0, so it is not used here.
 */
export async function ownerSession(url, owner) {
	// 1.x answers /healthz/readiness before its REST routes are mounted (1.100.1: a 404 for seconds).
	await waitFor(async () => (await fetch(`${url}/rest/settings`)).status === 200, { timeoutMs: 60_000, what: 'n8n’s REST API' });
	const response = await fetch(`${url}/rest/owner/setup`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ email: owner.email, firstName: 'Compat', lastName: 'Owner', password: owner.password }),
	});
	if (response.status !== 200) throw new Error(`owner setup failed (${response.status}): ${await response.text()}`);
	return restSession(url, owner);
}

/** A REST call that must succeed; returns the body's `data`. */
export async function ok(session, method, route, body) {
	const answer = await session.request(method, `/rest${route}`, body);
	if (answer.status >= 300) throw new Error(`${method} ${route}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`);
	return answer.body.data;
}

/**
 * The resource locator's "From list" as the editor asks it (`POST
 * /rest/dynamic-node-parameters/resource-locator-results`): the same body in 1.100 and 2.41 (2.x adds
 * optional projectId and workflowId, and accepts a numeric paginationToken, 1.x only a string).
 */
export function searchList(session, { nodeType, version = 1, parameters, path, methodName, credentials, filter, paginationToken }) {
	return ok(session, 'POST', '/dynamic-node-parameters/resource-locator-results', {
		path,
		nodeTypeAndVersion: { name: nodeType, version },
		currentNodeParameters: parameters,
		methodName,
		credentials,
		...(filter === undefined ? {} : { filter }),
		...(paginationToken === undefined ? {} : { paginationToken }),
	});
}

/**
 * Fetch Test Event as the editor sends it: a manual run of the workflow from the trigger, up to the
 * trigger (`POST /rest/workflows/:id/run`). Returns the execution id. The body differs by version:
 * - the workflow itself goes in the body up to 2.0.3 (its controller reads `workflowData`); 2.20.12 and
 *   2.41.1 run the saved workflow (2.41.1's ManualRunDto drops unknown keys). Versions between 2.0.3
 *   and 2.20.12 are not tested: they get the workflow too, which the newer ones ignore.
 * - the destination is `{ nodeName, mode }` in 1.123.81 and every 2.x (n8n pull request 22244, Nov
 *   2025, made it required), a node name in 1.100.1 (a name sent to 1.123.81 fails: "Could not find a
 *   node named "undefined""). 1.101 to 1.122 are not tested: they get the name.
 */
export async function fetchTestEvent(session, version, workflowId, triggerName) {
	const body = {
		triggerToStartFrom: { name: triggerName },
		destinationNode: atLeast(version, '1.123.0') ? { nodeName: triggerName, mode: 'inclusive' } : triggerName,
	};
	if (!atLeast(version, '2.20.0')) body.workflowData = await ok(session, 'GET', `/workflows/${workflowId}`);
	const data = await ok(session, 'POST', `/workflows/${workflowId}/run`, body);
	if (!data?.executionId) throw new Error(`Fetch Test Event started no execution: ${JSON.stringify(data)}`);
	return String(data.executionId);
}

/**
 * Creates a workflow and activates (2.x: publishes) it as the editor does; returns its id. Through
 * the REST API, not `import:workflow` + `publish:workflow`: 2.0.3's import writes no workflow history,
 * and its publish:workflow then fails ("Version … not found for workflow"). 1.x takes `active` in a
 * PATCH of the workflow; 2.x has `POST /rest/workflows/:id/activate` with the version to publish.
 */
export async function createActiveWorkflow(session, version, { name, nodes, connections, settings }) {
	// `active: false` as the editor sends it: 1.100.1 and 2.0.3 fail without it (NOT NULL constraint).
	const created = await ok(session, 'POST', '/workflows', { name, nodes, connections, settings, active: false });
	if (atLeast(version, '2.0.0')) await ok(session, 'POST', `/workflows/${created.id}/activate`, { versionId: created.versionId });
	else await ok(session, 'PATCH', `/workflows/${created.id}`, { active: true, versionId: created.versionId });
	return String(created.id);
}
