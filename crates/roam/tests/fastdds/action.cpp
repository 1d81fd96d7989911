// The action modes of roam_fastdds_node: example_interfaces/action/Fibonacci served and called
// as a ROS 2 node on rmw_fastrtps does it, without ROS 2. rcl_action makes an action of three
// services and two topics under `<name>/_action/`, which rmw_fastrtps puts on the wire as
//   rq/<name>/_action/send_goalRequest    rr/<name>/_action/send_goalReply    Fibonacci_SendGoal
//   rq/<name>/_action/cancel_goalRequest  rr/<name>/_action/cancel_goalReply  action_msgs CancelGoal
//   rq/<name>/_action/get_resultRequest   rr/<name>/_action/get_resultReply   Fibonacci_GetResult
//   rt/<name>/_action/feedback            Fibonacci_FeedbackMessage
//   rt/<name>/_action/status              action_msgs GoalStatusArray
// the services in rmw_fastrtps's convention (as the server and client modes of node.cpp), with
// rcl_action's QoS: services and feedback reliable, volatile, keep last 10; status reliable,
// transient-local, keep last 1 (a client that comes later still learns every goal's state).
//
// action-server: accepts every goal and runs it on its own thread, one Fibonacci number
//   (0, 1, 1, 2, 3, ...; order + 1 of them) per --step-ms, publishing the partial sequence as
//   feedback at each number and the status of every goal it knows at each change. get_result
//   is answered when the goal ends (requests that come earlier wait for it); cancel_goal as
//   rcl_action answers it (NONE with the goals now canceling, UNKNOWN_GOAL_ID,
//   GOAL_TERMINATED; a zero UUID and stamp cancels every goal). A goal sent again with the
//   same UUID (a client retrying) gets the same answer. Lines: "goal <uuid> order N",
//   "cancel <uuid>", then "succeeded <uuid>" or "canceled <uuid>".
// action-client: waits until the action server is there (rcl_action_server_is_available: the
//   three services' server endpoints and the two topics' writers matched), sends one goal with
//   a random UUID and asks for its result as soon as it is accepted, as rclcpp does; a call
//   without a reply within --timeout is sent again. Lines: "accepted" (or "rejected"),
//   "feedback 0,1,1" for each feedback of its goal, "status N" at each change of its goal's
//   status, "cancel <return_code> <goals canceling>" (--cancel-after K: after K feedbacks), and
//   last "result <status> 0,1,1,2", once the status topic showed that status too (or 5 s
//   passed: both travel separately).

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fastdds/rtps/common/WriteParams.h>

#include "RoamTypes.h"
#include "RoamTypesPubSubTypes.h"
#include "node.hpp"

namespace roam_node {
namespace {

using eprosima::fastrtps::rtps::SampleIdentity;
using eprosima::fastrtps::rtps::WriteParams;

namespace fib = example_interfaces::action::dds_;
using action_msgs::msg::dds_::GoalInfo_;
using action_msgs::msg::dds_::GoalStatus_;
using action_msgs::msg::dds_::GoalStatusArray_;
using action_msgs::srv::dds_::CancelGoal_Request_;
using action_msgs::srv::dds_::CancelGoal_Response_;
using builtin_interfaces::msg::dds_::Time_;
using Uuid = std::array<uint8_t, 16>;
using Clock = std::chrono::steady_clock;

// action_msgs/msg/GoalStatus
constexpr int8_t STATUS_UNKNOWN = 0;
constexpr int8_t STATUS_ACCEPTED = 1;
constexpr int8_t STATUS_EXECUTING = 2;
constexpr int8_t STATUS_CANCELING = 3;
constexpr int8_t STATUS_SUCCEEDED = 4;
constexpr int8_t STATUS_CANCELED = 5;
constexpr int8_t STATUS_ABORTED = 6;
// action_msgs/srv/CancelGoal's return codes
constexpr int8_t ERROR_NONE = 0;
constexpr int8_t ERROR_UNKNOWN_GOAL_ID = 2;
constexpr int8_t ERROR_GOAL_TERMINATED = 3;

bool terminal(int8_t status)
{
    return status >= STATUS_SUCCEEDED;
}

std::string hex(const Uuid& id)
{
    std::string s;
    char b[3];
    for (uint8_t x : id)
    {
        std::snprintf(b, sizeof(b), "%02x", x);
        s += b;
    }
    return s;
}

std::string join(const std::vector<int32_t>& v)
{
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
    {
        s += (i ? "," : "") + std::to_string(v[i]);
    }
    return s;
}

Time_ now()
{
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::system_clock::now().time_since_epoch()).count();
    Time_ t;
    t.sec(static_cast<int32_t>(ns / 1000000000));
    t.nanosec(static_cast<uint32_t>(ns % 1000000000));
    return t;
}

bool is_zero(const Time_& t)
{
    return t.sec() == 0 && t.nanosec() == 0;
}

bool at_or_before(const Time_& a, const Time_& b)
{
    return a.sec() < b.sec() || (a.sec() == b.sec() && a.nanosec() <= b.nanosec());
}

/// Takes every valid sample of type T from `r`, handing each to `f`; whether there was any.
template <typename T, typename F>
bool take_all(DataReader* r, F&& f)
{
    bool any = false;
    T sample;
    SampleInfo info;
    while (r->take_next_sample(&sample, &info) == ReturnCode_t::RETCODE_OK)
    {
        if (info.valid_data)
        {
            any = true;
            f(sample, info);
        }
    }
    return any;
}

/// The action's topics (names in the head of this file) and its endpoints' QoS.
struct ActionTopics
{
    Topic* send_goal_rq;
    Topic* send_goal_rr;
    Topic* cancel_rq;
    Topic* cancel_rr;
    Topic* result_rq;
    Topic* result_rr;
    Topic* feedback;
    Topic* status;
    Args services; // and feedback: reliable, volatile, keep last 10
    Args status_qos; // reliable, transient-local, keep last 1

    ActionTopics(DomainParticipant* p, const Args& a)
        : services(a)
        , status_qos(a)
    {
        std::string base = a.name;
        while (!base.empty() && base[0] == '/')
        {
            base.erase(0, 1);
        }
        base += "/_action/";
        send_goal_rq = make_topic(p, "rq/" + base + "send_goalRequest",
                new fib::Fibonacci_SendGoal_Request_PubSubType());
        send_goal_rr = make_topic(p, "rr/" + base + "send_goalReply",
                new fib::Fibonacci_SendGoal_Response_PubSubType());
        cancel_rq = make_topic(p, "rq/" + base + "cancel_goalRequest",
                new action_msgs::srv::dds_::CancelGoal_Request_PubSubType());
        cancel_rr = make_topic(p, "rr/" + base + "cancel_goalReply",
                new action_msgs::srv::dds_::CancelGoal_Response_PubSubType());
        result_rq = make_topic(p, "rq/" + base + "get_resultRequest",
                new fib::Fibonacci_GetResult_Request_PubSubType());
        result_rr = make_topic(p, "rr/" + base + "get_resultReply",
                new fib::Fibonacci_GetResult_Response_PubSubType());
        feedback = make_topic(p, "rt/" + base + "feedback",
                new fib::Fibonacci_FeedbackMessage_PubSubType());
        status = make_topic(p, "rt/" + base + "status",
                new action_msgs::msg::dds_::GoalStatusArray_PubSubType());
        services.transient_local = false;
        services.depth = 10;
        status_qos.transient_local = true;
        status_qos.depth = 1;
    }
};

/// Match logs ("<label> matched N" on stderr) for a node's endpoints; outlives them.
struct MatchLogs
{
    WriterLog writers[5];
    ReaderLog readers[5];
    int w = 0;
    int r = 0;

    WriterLog* writer(const std::string& label)
    {
        writers[w].label = label + " writer";
        return &writers[w++];
    }

    ReaderLog* reader(const std::string& label)
    {
        readers[r].label = label + " reader";
        return &readers[r++];
    }
};

DataWriter* make_writer(Entities& e, Topic* t, const Args& qos, MatchLogs& logs,
        const std::string& label)
{
    DataWriter* w = e.publisher->create_datawriter(t, writer_qos(qos), logs.writer(label));
    if (w == nullptr)
    {
        err("cannot create the " + label + " writer");
        std::exit(1);
    }
    return w;
}

DataReader* make_reader(Entities& e, Topic* t, const Args& qos, MatchLogs& logs,
        const std::string& label)
{
    DataReader* r = e.subscriber->create_datareader(t, reader_qos(qos), logs.reader(label));
    if (r == nullptr)
    {
        err("cannot create the " + label + " reader");
        std::exit(1);
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
// action-server

struct Goal
{
    Time_ stamp;
    int32_t order = 0;
    int8_t status = STATUS_ACCEPTED;
    std::vector<int32_t> sequence;
    bool cancel_requested = false;
    /// get_result requests that came before the goal ended: answered when it does.
    std::vector<SampleIdentity> waiting;
};

struct Server
{
    long step_ms = 100;
    DataWriter* goal_replies = nullptr;
    DataWriter* cancel_replies = nullptr;
    DataWriter* result_replies = nullptr;
    DataWriter* feedback = nullptr;
    DataWriter* status = nullptr;

    std::mutex m;
    std::condition_variable wake; // a cancel, or the end: goals stop waiting for their step
    std::map<Uuid, Goal> goals;   // every goal ever accepted (references stay valid)
    std::vector<std::thread> threads;

    ~Server()
    {
        {
            std::lock_guard<std::mutex> l(m);
            g_stop = true;
        }
        wake.notify_all();
        for (auto& t : threads)
        {
            t.join();
        }
    }

    /// The status of every goal, as rcl_action publishes it at each change (m held).
    void publish_status()
    {
        GoalStatusArray_ all;
        for (const auto& kv : goals)
        {
            GoalStatus_ s;
            s.goal_info().goal_id().uuid(kv.first);
            s.goal_info().stamp(kv.second.stamp);
            s.status(kv.second.status);
            all.status_list().push_back(s);
        }
        status->write(&all);
    }

    void answer_result(const Goal& g, const SampleIdentity& to)
    {
        fib::Fibonacci_GetResult_Response_ r;
        r.status(g.status);
        r.result().sequence(g.sequence);
        WriteParams wp;
        wp.related_sample_identity(to);
        result_replies->write(&r, wp);
    }

    void on_send_goal(const fib::Fibonacci_SendGoal_Request_& req, const SampleInfo& info)
    {
        std::lock_guard<std::mutex> l(m);
        const Uuid& id = req.goal_id().uuid();
        auto it = goals.find(id);
        const bool fresh = it == goals.end();
        if (fresh)
        {
            Goal g;
            g.stamp = now();
            g.order = req.goal().order();
            it = goals.emplace(id, g).first;
            out("goal " + hex(id) + " order " + std::to_string(g.order));
        }
        else
        {
            err("goal " + hex(id) + " sent again: answered again");
        }
        fib::Fibonacci_SendGoal_Response_ resp;
        resp.accepted(true);
        resp.stamp(it->second.stamp);
        WriteParams wp;
        wp.related_sample_identity(reply_identity(info));
        goal_replies->write(&resp, wp);
        if (fresh)
        {
            publish_status();
            threads.emplace_back([this, id] { execute(id); });
        }
    }

    void on_cancel(const CancelGoal_Request_& req, const SampleInfo& info)
    {
        std::lock_guard<std::mutex> l(m);
        const Uuid& id = req.goal_info().goal_id().uuid();
        const Time_& stamp = req.goal_info().stamp();
        const bool any_id = id == Uuid{};
        CancelGoal_Response_ resp;
        bool changed = false;
        for (auto& kv : goals)
        {
            Goal& g = kv.second;
            // action_msgs/srv/CancelGoal: this goal; every goal (zero UUID and stamp); and
            // every goal accepted at or before a non-zero stamp.
            bool chosen = (!any_id && kv.first == id) || (any_id && is_zero(stamp)) ||
                    (!is_zero(stamp) && at_or_before(g.stamp, stamp));
            if (!chosen || terminal(g.status))
            {
                continue;
            }
            if (!g.cancel_requested)
            {
                g.cancel_requested = true;
                g.status = STATUS_CANCELING;
                changed = true;
                out("cancel " + hex(kv.first));
            }
            GoalInfo_ gi;
            gi.goal_id().uuid(kv.first);
            gi.stamp(g.stamp);
            resp.goals_canceling().push_back(gi);
        }
        resp.return_code(ERROR_NONE);
        if (resp.goals_canceling().empty() && !any_id)
        {
            resp.return_code(goals.count(id) ? ERROR_GOAL_TERMINATED : ERROR_UNKNOWN_GOAL_ID);
        }
        WriteParams wp;
        wp.related_sample_identity(reply_identity(info));
        cancel_replies->write(&resp, wp);
        if (changed)
        {
            publish_status();
            wake.notify_all();
        }
    }

    void on_get_result(const fib::Fibonacci_GetResult_Request_& req, const SampleInfo& info)
    {
        std::lock_guard<std::mutex> l(m);
        auto it = goals.find(req.goal_id().uuid());
        if (it == goals.end())
        {
            answer_result(Goal{Time_(), 0, STATUS_UNKNOWN, {}, false, {}}, reply_identity(info));
        }
        else if (terminal(it->second.status))
        {
            answer_result(it->second, reply_identity(info));
        }
        else
        {
            it->second.waiting.push_back(reply_identity(info));
        }
    }

    /// A goal's thread: one number per step until order + 1 of them, a cancel or the end.
    void execute(Uuid id)
    {
        std::unique_lock<std::mutex> l(m);
        Goal& g = goals[id];
        if (!g.cancel_requested)
        {
            g.status = STATUS_EXECUTING;
            publish_status();
        }
        int64_t a = 0;
        int64_t b = 1;
        while (!g.cancel_requested && !g_stop.load() &&
                static_cast<long>(g.sequence.size()) <= g.order)
        {
            if (!g.sequence.empty())
            {
                wake.wait_for(l, std::chrono::milliseconds(step_ms),
                        [&] { return g.cancel_requested || g_stop.load(); });
                if (g.cancel_requested || g_stop.load())
                {
                    break;
                }
            }
            g.sequence.push_back(static_cast<int32_t>(a));
            int64_t next = a + b;
            a = b;
            b = next;
            fib::Fibonacci_FeedbackMessage_ f;
            f.goal_id().uuid(id);
            f.feedback().sequence(g.sequence);
            feedback->write(&f);
        }
        const bool complete = static_cast<long>(g.sequence.size()) > g.order;
        g.status = complete ? STATUS_SUCCEEDED :
                g.cancel_requested ? STATUS_CANCELED : STATUS_ABORTED;
        publish_status();
        for (const auto& to : g.waiting)
        {
            answer_result(g, to);
        }
        g.waiting.clear();
        out(std::string(complete ? "succeeded " : g.cancel_requested ? "canceled " : "aborted ") +
                hex(id));
    }
};

} // namespace

int action_server(const Args& a)
{
    MatchLogs logs; // outlives the entities
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_action_server");
    ActionTopics t(e.participant, a);
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    // Declared after the entities: its destructor ends the goals' threads before they go.
    Server s;
    s.step_ms = a.step_ms;
    s.goal_replies = make_writer(e, t.send_goal_rr, t.services, logs, "send_goal reply");
    s.cancel_replies = make_writer(e, t.cancel_rr, t.services, logs, "cancel_goal reply");
    s.result_replies = make_writer(e, t.result_rr, t.services, logs, "get_result reply");
    s.feedback = make_writer(e, t.feedback, t.services, logs, "feedback");
    s.status = make_writer(e, t.status, t.status_qos, logs, "status");
    DataReader* goals = make_reader(e, t.send_goal_rq, t.services, logs, "send_goal request");
    DataReader* cancels = make_reader(e, t.cancel_rq, t.services, logs, "cancel_goal request");
    DataReader* results = make_reader(e, t.result_rq, t.services, logs, "get_result request");
    {
        // The empty status, as rcl_action's server has it from the start.
        std::lock_guard<std::mutex> l(s.m);
        s.publish_status();
    }
    out("ready");
    while (!g_stop.load())
    {
        bool any = take_all<fib::Fibonacci_SendGoal_Request_>(goals,
                [&](const fib::Fibonacci_SendGoal_Request_& r, const SampleInfo& i) {
                    s.on_send_goal(r, i);
                });
        any |= take_all<CancelGoal_Request_>(cancels,
                [&](const CancelGoal_Request_& r, const SampleInfo& i) { s.on_cancel(r, i); });
        any |= take_all<fib::Fibonacci_GetResult_Request_>(results,
                [&](const fib::Fibonacci_GetResult_Request_& r, const SampleInfo& i) {
                    s.on_get_result(r, i);
                });
        if (!any)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// action-client

namespace {

/// One of the action's services, client side: its request writer, its reply reader, and the
/// sequence numbers of the requests sent (a retry is another request; any one's reply will do).
struct Call
{
    DataWriter* requests = nullptr;
    DataReader* replies = nullptr;
    std::set<int64_t> sent;
    Clock::time_point last{};
    bool answered = false;

    template <typename Req>
    void send(Req& req)
    {
        WriteParams wp;
        // As rmw_fastrtps from Humble on: the request names the reply reader.
        wp.related_sample_identity().writer_guid(replies->guid());
        last = Clock::now();
        if (!requests->write(&req, wp))
        {
            err("request not written");
            return;
        }
        sent.insert(wp.sample_identity().sequence_number().to64long());
        err("request sent as " + to_string(wp.sample_identity()));
    }

    /// Whether a reply answers one of this client's requests (as rmw_fastrtps decides it).
    bool ours(const SampleInfo& info) const
    {
        const auto& rel = info.related_sample_identity;
        return (rel.writer_guid() == replies->guid() || rel.writer_guid() == requests->guid()) &&
               sent.count(rel.sequence_number().to64long()) > 0;
    }

    /// Sent, not answered, and the last try is older than `timeout` seconds.
    bool overdue(double timeout) const
    {
        return !answered && last != Clock::time_point{} &&
               Clock::now() - last > std::chrono::duration<double>(timeout);
    }

    bool server_matched() const
    {
        PublicationMatchedStatus ps;
        SubscriptionMatchedStatus ss;
        requests->get_publication_matched_status(ps);
        replies->get_subscription_matched_status(ss);
        return ps.current_count > 0 && ss.current_count > 0;
    }
};

bool writer_matched(DataReader* r)
{
    SubscriptionMatchedStatus s;
    r->get_subscription_matched_status(s);
    return s.current_count > 0;
}

Uuid random_uuid()
{
    std::random_device rd;
    Uuid id;
    for (auto& b : id)
    {
        b = static_cast<uint8_t>(rd());
    }
    return id;
}

} // namespace

int action_client(const Args& a)
{
    MatchLogs logs; // outlives the entities
    Entities e;
    e.participant = loopback_participant(a.domain, "roam_fastdds_action_client");
    ActionTopics t(e.participant, a);
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    Call goal{make_writer(e, t.send_goal_rq, t.services, logs, "send_goal request"),
              make_reader(e, t.send_goal_rr, t.services, logs, "send_goal reply")};
    Call cancel{make_writer(e, t.cancel_rq, t.services, logs, "cancel_goal request"),
                make_reader(e, t.cancel_rr, t.services, logs, "cancel_goal reply")};
    Call result{make_writer(e, t.result_rq, t.services, logs, "get_result request"),
                make_reader(e, t.result_rr, t.services, logs, "get_result reply")};
    DataReader* feedback = make_reader(e, t.feedback, t.services, logs, "feedback");
    DataReader* status = make_reader(e, t.status, t.status_qos, logs, "status");
    out("ready");

    // rclcpp's wait_for_action_server: every service's server and both topics' writers.
    auto waiting_since = Clock::now();
    while (!g_stop.load())
    {
        bool s[5] = {goal.server_matched(), cancel.server_matched(), result.server_matched(),
                     writer_matched(feedback), writer_matched(status)};
        if (s[0] && s[1] && s[2] && s[3] && s[4])
        {
            break;
        }
        if (Clock::now() - waiting_since > std::chrono::seconds(5))
        {
            waiting_since = Clock::now();
            err(std::string("waiting for the action server: send_goal ") + (s[0] ? "yes" : "no") +
                    ", cancel_goal " + (s[1] ? "yes" : "no") + ", get_result " +
                    (s[2] ? "yes" : "no") + ", feedback " + (s[3] ? "yes" : "no") + ", status " +
                    (s[4] ? "yes" : "no"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    out("action server available");

    const Uuid id = random_uuid();
    fib::Fibonacci_SendGoal_Request_ goal_req;
    goal_req.goal_id().uuid(id);
    goal_req.goal().order(static_cast<int32_t>(a.order));
    fib::Fibonacci_GetResult_Request_ result_req;
    result_req.goal_id().uuid(id);
    CancelGoal_Request_ cancel_req;
    cancel_req.goal_info().goal_id().uuid(id);
    err("goal " + hex(id) + " order " + std::to_string(a.order));
    goal.send(goal_req);

    long feedbacks = 0;
    int goal_status = -1; // as the status topic last said
    bool rejected = false;
    fib::Fibonacci_GetResult_Response_ answer;
    Clock::time_point answered_at;
    while (!g_stop.load())
    {
        bool any = take_all<fib::Fibonacci_SendGoal_Response_>(goal.replies,
                [&](const fib::Fibonacci_SendGoal_Response_& r, const SampleInfo& i) {
                    if (goal.answered || !goal.ours(i))
                    {
                        return;
                    }
                    goal.answered = true;
                    if (!r.accepted())
                    {
                        out("rejected");
                        rejected = true;
                        return;
                    }
                    out("accepted");
                    result.send(result_req);
                });
        if (rejected)
        {
            return 1;
        }
        any |= take_all<fib::Fibonacci_FeedbackMessage_>(feedback,
                [&](const fib::Fibonacci_FeedbackMessage_& f, const SampleInfo&) {
                    if (f.goal_id().uuid() == id)
                    {
                        ++feedbacks;
                        out("feedback " + join(f.feedback().sequence()));
                    }
                });
        any |= take_all<GoalStatusArray_>(status, [&](const GoalStatusArray_& all, const SampleInfo&) {
            std::string list;
            for (const auto& s : all.status_list())
            {
                list += " " + hex(s.goal_info().goal_id().uuid()).substr(0, 8) + ":" +
                        std::to_string(s.status());
            }
            err("status array of " + std::to_string(all.status_list().size()) + " goals" + list);
            for (const auto& s : all.status_list())
            {
                if (s.goal_info().goal_id().uuid() == id && s.status() != goal_status)
                {
                    goal_status = s.status();
                    out("status " + std::to_string(goal_status));
                }
            }
        });
        if (a.cancel_after >= 0 && feedbacks >= a.cancel_after && cancel.sent.empty() &&
                goal.answered && !result.answered)
        {
            cancel.send(cancel_req);
        }
        any |= take_all<CancelGoal_Response_>(cancel.replies,
                [&](const CancelGoal_Response_& r, const SampleInfo& i) {
                    if (cancel.answered || !cancel.ours(i))
                    {
                        return;
                    }
                    cancel.answered = true;
                    out("cancel " + std::to_string(r.return_code()) + " " +
                            std::to_string(r.goals_canceling().size()));
                });
        any |= take_all<fib::Fibonacci_GetResult_Response_>(result.replies,
                [&](const fib::Fibonacci_GetResult_Response_& r, const SampleInfo& i) {
                    if (result.answered || !result.ours(i))
                    {
                        return;
                    }
                    result.answered = true;
                    answer = r;
                    answered_at = Clock::now();
                    err("result " + std::to_string(r.status()) + " arrived");
                });
        // The status topic, the cancel reply and the result reply are separate topics, so
        // they may arrive in any order: wait (5 s at most) for all that is expected.
        if (result.answered &&
                ((goal_status == answer.status() && (cancel.sent.empty() || cancel.answered)) ||
                 Clock::now() - answered_at > std::chrono::seconds(5)))
        {
            out("result " + std::to_string(answer.status()) + " " +
                    join(answer.result().sequence()));
            return 0;
        }
        // Calls without a reply are sent again (get_result too: its reply may be far off,
        // but a lost request would never get one).
        if (goal.overdue(a.timeout))
        {
            err("no reply to send_goal: again");
            goal.send(goal_req);
        }
        if (cancel.overdue(a.timeout))
        {
            err("no reply to cancel_goal: again");
            cancel.send(cancel_req);
        }
        if (result.overdue(a.timeout))
        {
            err("no result yet: get_result again");
            result.send(result_req);
        }
        if (!any)
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    return 1;
}

} // namespace roam_node
