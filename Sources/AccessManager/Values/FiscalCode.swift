/// The national identifier a third party uses to ask for one person's data.
///
/// Normalised to upper case without spaces. A 16-character code that starts with six letters
/// is read as an Italian *codice fiscale* and must have the right shape and check character
/// (omocodia substitutions included); anything else must be a generic national id of 5–20
/// letters and digits with at least one digit.
package struct FiscalCode: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let candidate = String(raw.uppercased().filter { $0 != " " })
        let characters = Array(candidate)
        guard characters.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw InvalidValue("must contain only letters and digits")
        }
        if characters.count == 16, characters.prefix(6).allSatisfy(\.isLetter) {
            try Self.checkCodiceFiscale(characters)
        } else {
            guard (5...20).contains(characters.count), characters.contains(where: \.isNumber) else {
                throw InvalidValue("must be an Italian codice fiscale or a national id of 5–20 letters and digits")
            }
        }
        self.value = candidate
    }

    /// Digits, or the letters that replace them in omocodia codes.
    private static let digitLike: Set<Character> = Set("0123456789LMNPQRSTUV")
    private static let monthLetters: Set<Character> = Set("ABCDEHLMPRST")
    /// Values of characters in odd (1st, 3rd, …) positions, in the order 0–9 then A–Z.
    private static let oddValues = [
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21,
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23,
    ]

    private static func checkCodiceFiscale(_ code: [Character]) throws(InvalidValue) {
        let shape = InvalidValue("is not a valid Italian codice fiscale")
        let digitPositions = [6, 7, 9, 10, 12, 13, 14]
        guard digitPositions.allSatisfy({ digitLike.contains(code[$0]) }),
            monthLetters.contains(code[8]), code[11].isLetter, code[15].isLetter
        else { throw shape }
        var sum = 0
        for (index, character) in code.prefix(15).enumerated() {
            let ordinal =
                character.isNumber
                ? Int(character.asciiValue! - Character("0").asciiValue!)
                : Int(character.asciiValue! - Character("A").asciiValue!) + 10
            if index % 2 == 0 {
                sum += oddValues[ordinal]
            } else {
                sum += character.isNumber ? ordinal : ordinal - 10
            }
        }
        let expected = Character(UnicodeScalar(UInt8(sum % 26) + Character("A").asciiValue!))
        guard code[15] == expected else { throw InvalidValue("has a wrong check character") }
    }
}
