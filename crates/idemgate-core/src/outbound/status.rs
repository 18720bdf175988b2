//! Svix's `MessageStatus` (0 success, 1 pending, 2 fail, 3 sending; `statusText` the same
//! as words) for what idemgate stores: a message's delivery to one endpoint is a job, and
//! its tries are attempts (`docs/design/outbound-api.md` §3.3). Also Svix's
//! `StatusClass`, the attempt lists' filter by an answer's hundreds.

use crate::job::JobState;

/// A message's (or an attempt's) status as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageStatus {
    /// Delivered (0).
    Success,
    /// Waiting for its next attempt (1).
    Pending,
    /// Given up, or an attempt that failed (2).
    Fail,
    /// An attempt is under way (3).
    Sending,
}

impl MessageStatus {
    /// Every status, by code.
    pub const ALL: [Self; 4] = [Self::Success, Self::Pending, Self::Fail, Self::Sending];

    /// The status of a job in `state`. `superseded` (not delivered because a newer version
    /// was seen, which only configured sources with an ordering key produce) reads as a
    /// failure: the message was not delivered and will not be.
    #[must_use]
    pub fn of_job(state: JobState) -> Self {
        match state {
            JobState::Succeeded => Self::Success,
            JobState::Pending | JobState::Retrying => Self::Pending,
            JobState::Running => Self::Sending,
            JobState::Dead | JobState::Superseded => Self::Fail,
        }
    }

    /// The status of one finished attempt: a 2xx answer succeeded, anything else (another
    /// status, or no answer at all) failed.
    #[must_use]
    pub fn of_attempt(status_code: Option<u16>) -> Self {
        match status_code {
            Some(200..=299) => Self::Success,
            _ => Self::Fail,
        }
    }

    /// Its number on the wire (`status`).
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Pending => 1,
            Self::Fail => 2,
            Self::Sending => 3,
        }
    }

    /// Its word on the wire (`statusText`).
    #[must_use]
    pub fn text(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Pending => "pending",
            Self::Fail => "fail",
            Self::Sending => "sending",
        }
    }

    /// The status of a wire number (a `status` query filter); `None` for another number.
    #[must_use]
    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|status| i64::from(status.code()) == code)
    }

    /// The job states that read as this status (the inverse of [`Self::of_job`]), for a
    /// filter on a delivery's status.
    #[must_use]
    pub fn job_states(self) -> Vec<JobState> {
        JobState::ALL.into_iter().filter(|state| Self::of_job(*state) == self).collect()
    }
}

/// Svix's `StatusClass`: an attempt's answer by its hundreds, `0` for no answer
/// (stored without a status, shown as status code 0) and the codes below 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    /// `0`: no answer, or a code below 100.
    None,
    /// `100`.
    Informational,
    /// `200`.
    Success,
    /// `300`.
    Redirection,
    /// `400`.
    ClientError,
    /// `500`.
    ServerError,
}

impl StatusClass {
    /// Every class, by code.
    pub const ALL: [Self; 6] =
        [Self::None, Self::Informational, Self::Success, Self::Redirection, Self::ClientError, Self::ServerError];

    /// Its number on the wire.
    #[must_use]
    pub fn code(self) -> u16 {
        match self {
            Self::None => 0,
            Self::Informational => 100,
            Self::Success => 200,
            Self::Redirection => 300,
            Self::ClientError => 400,
            Self::ServerError => 500,
        }
    }

    /// The class of a wire number (a `status_code_class` query filter); `None` for another.
    #[must_use]
    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|class| i64::from(class.code()) == code)
    }

    /// The status codes it holds, both ends included; an attempt without an answer counts
    /// as code 0.
    #[must_use]
    pub fn codes(self) -> (u16, u16) {
        let low = self.code();
        (low, low + 99)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_state_has_the_status_of_the_plan() {
        let read = |name: &str| name.parse::<JobState>().map(MessageStatus::of_job).map(MessageStatus::code);
        // By the store's state names, as the plan's table (§3.3) lists them.
        assert_eq!(read("succeeded"), Ok(0));
        assert_eq!(read("pending"), Ok(1));
        assert_eq!(read("retrying"), Ok(1));
        assert_eq!(read("dead"), Ok(2));
        assert_eq!(read("superseded"), Ok(2));
        assert_eq!(read("running"), Ok(3));
        assert!(JobState::ALL.iter().all(|state| MessageStatus::ALL.contains(&MessageStatus::of_job(*state))));
    }

    #[test]
    fn codes_and_words_are_svix_message_status() {
        let wire: Vec<(u8, &str)> = MessageStatus::ALL.iter().map(|s| (s.code(), s.text())).collect();
        assert_eq!(wire, [(0, "success"), (1, "pending"), (2, "fail"), (3, "sending")]);
        assert_eq!(MessageStatus::from_code(3), Some(MessageStatus::Sending));
        assert_eq!(MessageStatus::from_code(4), None);
        assert_eq!(MessageStatus::from_code(-1), None);
    }

    #[test]
    fn a_status_filter_takes_the_job_states_that_read_as_it() {
        for status in MessageStatus::ALL {
            let states = status.job_states();
            assert!(!states.is_empty(), "{status:?}");
            assert!(states.iter().all(|state| MessageStatus::of_job(*state) == status));
        }
        assert_eq!(MessageStatus::Pending.job_states(), [JobState::Pending, JobState::Retrying]);
    }

    #[test]
    fn status_code_classes_are_svix_hundreds_with_no_answer_as_zero() {
        let codes: Vec<u16> = StatusClass::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes, [0, 100, 200, 300, 400, 500]);
        assert_eq!(StatusClass::from_code(400).map(StatusClass::codes), Some((400, 499)));
        assert_eq!(StatusClass::from_code(0).map(StatusClass::codes), Some((0, 99)));
        assert_eq!(StatusClass::from_code(250), None);
        assert_eq!(StatusClass::from_code(600), None);
    }

    #[test]
    fn an_attempt_succeeded_only_with_a_2xx_answer() {
        assert_eq!(MessageStatus::of_attempt(Some(200)), MessageStatus::Success);
        assert_eq!(MessageStatus::of_attempt(Some(299)), MessageStatus::Success);
        for failed in [Some(199), Some(300), Some(410), Some(500), None] {
            assert_eq!(MessageStatus::of_attempt(failed), MessageStatus::Fail, "{failed:?}");
        }
    }
}
