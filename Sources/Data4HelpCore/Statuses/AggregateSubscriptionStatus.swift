/// Whether an aggregate question is re-asked periodically (`aggregate_subscriptions.status`).
package enum AggregateSubscriptionStatus: String, Sendable, CaseIterable {
    /// Re-asked at each period's end.
    case active
    /// No longer re-asked (unsubscribed, or stopped by the budget; the reason is stored beside it).
    case stopped
}
