/** A topic with subscriptions that pick messages by SQL and correlation rules. */
import { ServiceBusAdministrationClient, ServiceBusClient } from "@azure/service-bus";

const connectionString = process.env.SERVICEBUS_CONNECTION_STRING || "<connection string>";
const topicName = process.env.TOPIC_NAME || "<topic name>";

export async function main() {
  const admin = new ServiceBusAdministrationClient(connectionString);
  await admin.createTopic(topicName);
  await admin.createSubscription(topicName, "RedOrders");
  await admin.deleteRule(topicName, "RedOrders", "$Default");
  await admin.createRule(topicName, "RedOrders", "red", { sqlExpression: "color = @color", sqlParameters: { "@color": "red" } });
  await admin.createSubscription(topicName, "HighPriority", {
    defaultRuleOptions: { name: "high", filter: { correlationId: "high", applicationProperties: { region: "eu" } } },
  });
  const ruleManager = new ServiceBusClient(connectionString).createRuleManager(topicName, "RedOrders");
  for await (const rule of ruleManager.listRules()) console.log(`RedOrders rule: ${rule.name}`);

  const sbClient = new ServiceBusClient(connectionString);
  await sbClient.createSender(topicName).sendMessages([
    { body: "red order", applicationProperties: { color: "red" } },
    { body: "blue order", applicationProperties: { color: "blue" } },
    { body: "urgent", correlationId: "high", applicationProperties: { region: "eu" } },
  ]);
  const red = await sbClient.createReceiver(topicName, "RedOrders", { receiveMode: "receiveAndDelete" }).receiveMessages(10, { maxWaitTimeInMs: 3000 });
  const high = await sbClient.createReceiver(topicName, "HighPriority", { receiveMode: "receiveAndDelete" }).receiveMessages(10, { maxWaitTimeInMs: 3000 });
  console.log(`RedOrders got ${red.map((m) => m.body)}; HighPriority got ${high.map((m) => m.body)}`);
  if (red.map((m) => m.body).join() !== "red order" || high.map((m) => m.body).join() !== "urgent") throw new Error("filters did not pick right");
  await admin.deleteTopic(topicName);
  await sbClient.close();
}

main().catch((err) => {
  console.log("topicFilters Sample - Error occurred: ", err);
  process.exit(1);
});
