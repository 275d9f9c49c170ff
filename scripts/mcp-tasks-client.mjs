// Drives rcpd mcp's MCP tasks with the official TypeScript SDK client:
// node mcp-tasks-client.mjs URL (run by scripts/mcp-conformance.sh, which puts
// @modelcontextprotocol/sdk beside it). Exits 1 when a check fails.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TaskStatusNotificationSchema, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
let passed = 0;
const failures = [];
function check(name, ok, detail) {
  if (ok) passed++;
  else failures.push(`${name}: ${detail ?? ''}`);
}

const client = new Client({ name: 'rcpgo-tasks-check', version: '1' }, { capabilities: {} });
const statuses = [];
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => { statuses.push(n.params); });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const caps = client.getServerCapabilities();
check('tasks capability', caps?.tasks?.requests?.tools?.call !== undefined && caps?.tasks?.list !== undefined && caps?.tasks?.cancel !== undefined, JSON.stringify(caps?.tasks));
const { tools } = await client.listTools();
const add = tools.find((t) => t.name === 'index_add');
const search = tools.find((t) => t.name === 'search');
check('index_add taskSupport', add?.execution?.taskSupport === 'optional', JSON.stringify(add?.execution));
check('search has no task support', !search?.execution?.taskSupport || search.execution.taskSupport === 'forbidden', JSON.stringify(search?.execution));

// create → status → result through callToolStream
const seen = [];
let final;
for await (const msg of client.experimental.tasks.callToolStream(
  { name: 'index_add', arguments: { documents: [{ id: 'ts-task-1', text: 'a document written by a TypeScript task' }] } },
  CallToolResultSchema, { task: { ttl: 60000 } })) {
  seen.push(msg.type);
  if (msg.type === 'taskCreated') check('task created working', msg.task.status === 'working' && msg.task.ttl === 60000, JSON.stringify(msg.task));
  if (msg.type === 'result') final = msg.result;
  if (msg.type === 'error') failures.push(`callToolStream error: ${msg.error}`);
}
check('stream: taskCreated then result', seen[0] === 'taskCreated' && seen.at(-1) === 'result', seen.join(','));
check('task result', JSON.stringify(final?.structuredContent?.ids) === '["ts-task-1"]', JSON.stringify(final));
const taskId = final?._meta?.['io.modelcontextprotocol/related-task']?.taskId;
check('result names its task', typeof taskId === 'string' && taskId.length > 0, JSON.stringify(final?._meta));

const got = await client.experimental.tasks.getTask(taskId);
check('tasks/get completed', got.status === 'completed', JSON.stringify(got));
const list = await client.experimental.tasks.listTasks();
check('tasks/list has it', list.tasks.some((t) => t.taskId === taskId), JSON.stringify(list));
let refused = false;
try { await client.experimental.tasks.cancelTask(taskId); } catch (e) { refused = e.code === -32602; }
check('cancel of a completed task refused (-32602)', refused);
const again = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
check('tasks/result again', JSON.stringify(again?.structuredContent?.ids) === '["ts-task-1"]', JSON.stringify(again));

// A second client (another session) cannot see the task.
const other = new Client({ name: 'rcpgo-tasks-other', version: '1' }, { capabilities: {} });
await other.connect(new StreamableHTTPClientTransport(new URL(url)));
let hidden = false;
try { await other.experimental.tasks.getTask(taskId); } catch (e) { hidden = e.code === -32602; }
check('another session cannot get it', hidden);
const otherList = await other.experimental.tasks.listTasks();
check('another session does not list it', !otherList.tasks.some((t) => t.taskId === taskId), JSON.stringify(otherList));
await other.close();

for (let i = 0; i < 50 && !statuses.some((s) => s.taskId === taskId); i++) await new Promise((r) => setTimeout(r, 100));
check('notifications/tasks/status completed', statuses.some((s) => s.taskId === taskId && s.status === 'completed'), JSON.stringify(statuses));

await client.close();
console.log(`tasks with the TypeScript SDK client: ${passed} checks passed, ${failures.length} failed`);
for (const f of failures) console.log(`FAIL ${f}`);
process.exit(failures.length ? 1 : 0);
